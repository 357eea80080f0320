# SPDX-License-Identifier: BSD-3-Clause
# Spack recipe of KokkosMoE, kept with the sources (namespace kokkos_moe).
#
# KokkosMoE has no public repository or release tarball yet, so the recipe
# names no homepage, url or git and declares no version: spack builds it from
# a checkout, as a develop spec of an environment, at the version of the
# checkout's CMakeLists.txt project() (0.1.0):
#
#   spack env create -d moe-env && spack env activate moe-env
#   spack repo add /path/to/checkout/spack
#   spack develop --path /path/to/checkout kokkos-moe@=0.1.0
#   spack add kokkos-moe@=0.1.0+cuda cuda_arch=90 ~openmp
#   spack install
#
# Once the project has a public repository, add homepage, git and versions
# with their sources (and PUBLIC_REPOSITORY in tests/spack/check_recipe.py).
#
# Spack versions: 0.22 and newer (MINIMUM_SPACK). Run with the development
# snapshot 0.23.0.dev0 of June 2024; written for current spack too, whose
# packages live in spack-packages (spack_repo.builtin).
#
# Checked without spack by tests/spack/check_recipe.py (CTest: SpackRecipe):
# every KokkosMoE_ENABLE_* option set here exists in the CMake files, every
# variant is used, the language dependencies suit MINIMUM_SPACK, the tests
# run once, no conflict refuses what its message recommends, and the Kokkos
# versions are ones spack's kokkos recipe has.
import os

import spack.directives
from spack.package import *

#: The oldest spack this recipe works with: language dependencies ("cxx",
#: "fortran") appeared in 0.22.
MINIMUM_SPACK = "0.22"

#: The language dependencies this spack knows. Spack 0.22 and the 0.23
#: development snapshots up to mid-2024 list them in SUPPORTED_LANGUAGES, and
#: "c" is not among them there (depends_on("c") fails to concretize with
#: "Package 'c' not found"); later spack knows c, cxx and fortran and has no
#: such list.
SPACK_LANGUAGES = getattr(spack.directives, "SUPPORTED_LANGUAGES", ("c", "cxx", "fortran"))


class KokkosMoe(CMakePackage, CudaPackage, ROCmPackage):
    """The Mixture-of-Experts layer of large language models written once in
    Kokkos (CUDA, HIP, OpenMP, Serial), with C and Fortran interfaces and
    HDF5 routing-trace replay drivers."""

    license("BSD-3-Clause")

    variant("openmp", default=True, description="Host backend with OpenMP (Kokkos+openmp)")
    variant("trace", default=True, description="HDF5 routing traces (KokkosMoE::trace) and drivers")
    variant("fortran", default=True, description="Fortran module over the C interface")
    variant("tests", default=False, description="GoogleTest unit tests, run by spack's install-time tests")
    variant("benchmarks", default=False, description="Google Benchmark benchmarks")
    variant("mpi", default=False,
            description="Expert parallelism over MPI (KokkosMoE::ep, kokkos-moe-replay --ep)")
    variant("nccl", default=False,
            description="The expert-parallel layer's NCCL transport (with +cuda +mpi)")

    depends_on("cxx", type="build")
    # The project's C sources (C interface tests and example): where this
    # spack knows the language (see SPACK_LANGUAGES); spack before that sets
    # CC for every build anyway.
    if "c" in SPACK_LANGUAGES:
        depends_on("c", type="build")
    depends_on("fortran", type="build", when="+fortran")
    depends_on("cmake@3.16:", type="build")

    variant("kokkoskernels", default=True,
            description="Router GEMM by Kokkos Kernels and the unfused baseline (else our own router kernel)")

    # The Kokkos release lines CI builds and tests (.ci/run): 3.4 (host, and
    # CUDA and HIP compile-and-link, with cmake/patches), 4.5 with Kokkos
    # Kernels 4.5 (Serial) and 5.2 without Kokkos Kernels (OpenMP).
    # What spack's kokkos recipe can build of them: 3.4.01 in spack up to
    # 0.23 (its builtin recipe ends at 4.3.01), 4.5.00 and 4.5.01 in current
    # spack-packages (from 3.7.02 to 5.1.1). Any other line, 5.2 always and
    # our patched 3.4 (CUDA 12+, Hopper), comes as an external: an installed
    # Kokkos declared in packages.yaml (docs/building.md).
    depends_on("kokkos@3.4,4.5,5.2")
    depends_on("kokkos-kernels@3.4,4.5", when="+kokkoskernels")
    conflicts("+kokkoskernels", when="^kokkos@5.2",
              msg="no Kokkos Kernels 5.2 is tested: use ~kokkoskernels with kokkos@5.2")
    depends_on("kokkos+openmp", when="+openmp")
    # Kokkos 5.2 has no cuda_lambda option (lambdas are always on).
    depends_on("kokkos+cuda+wrapper", when="+cuda")
    depends_on("kokkos+cuda_lambda", when="+cuda ^kokkos@:4")
    depends_on("kokkos+rocm", when="+rocm")
    depends_on("kokkos-kernels+cuda+cublas", when="+cuda+kokkoskernels")
    depends_on("kokkos-kernels+openmp", when="+openmp+kokkoskernels")
    # CUDA 13: Kokkos 4.0-4.6 do not compile with it. Kokkos 3.4 needs our
    # patches for CUDA 12+ and Hopper (scripts/deps.sh applies them), which
    # spack's kokkos 3.4 lacks; a conflict cannot tell spack's build from an
    # external patched one, so check_kokkos_34 refuses the former before the
    # configure step.
    conflicts("^kokkos@4.0:4.6", when="+cuda ^cuda@13:", msg="Kokkos 4.0-4.6 do not compile with CUDA 13")
    for arch in CudaPackage.cuda_arch_values:
        # Spack's kokkos maps no arch-specific "90a": Hopper is its 90.
        kokkos_arch = arch[:-1] if arch.endswith("a") else arch
        depends_on(f"kokkos cuda_arch={kokkos_arch}", when=f"+cuda cuda_arch={arch}")
    for target in ROCmPackage.amdgpu_targets:
        depends_on(f"kokkos amdgpu_target={target}", when=f"+rocm amdgpu_target={target}")
    # The CDNA targets of the matrix-core fragment (src/hip/), where the
    # amdgpu targets of this spack know them.
    cdna_targets = [t for t in ("gfx90a", "gfx940", "gfx941", "gfx942", "gfx950")
                    if t in ROCmPackage.amdgpu_targets]
    conflicts("+cuda", when="+rocm", msg="one device backend at a time")
    conflicts("cuda_arch=none", when="+cuda", msg="set cuda_arch (e.g. cuda_arch=90)")
    conflicts("amdgpu_target=none", when="+rocm", msg="set amdgpu_target (e.g. gfx90a)")
    conflicts("+benchmarks", when="~trace", msg="the benchmarks synthesise routing with +trace")

    depends_on("hdf5~mpi", when="+trace")
    depends_on("googletest", type=("build", "test"), when="+tests")
    depends_on("benchmark", when="+benchmarks")
    depends_on("mpi", when="+mpi")
    depends_on("nccl", when="+nccl")
    conflicts("+nccl", when="~cuda", msg="NCCL is the CUDA builds' transport")
    conflicts("+nccl", when="~mpi", msg="the NCCL communicator is made over MPI (+mpi)")
    depends_on("python@3.8:", type="test", when="+tests")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define_from_variant("KokkosMoE_ENABLE_TRACE", "trace"),
            # The drivers replay traces: built exactly when the trace component is.
            self.define_from_variant("KokkosMoE_ENABLE_DRIVERS", "trace"),
            self.define_from_variant("KokkosMoE_ENABLE_TESTS", "tests"),
            self.define_from_variant("KokkosMoE_ENABLE_BENCHMARKS", "benchmarks"),
            self.define_from_variant("KokkosMoE_ENABLE_FORTRAN", "fortran"),
            self.define_from_variant("KokkosMoE_ENABLE_KOKKOSKERNELS", "kokkoskernels"),
            self.define_from_variant("KokkosMoE_ENABLE_MPI", "mpi"),
            self.define_from_variant("KokkosMoE_ENABLE_NCCL", "nccl"),
            self.define("Kokkos_ROOT", spec["kokkos"].prefix),
            # Spack's compiler wrappers add the flags of the spec's target.
            self.define("KokkosMoE_HOST_ARCH", "baseline"),
        ]
        if spec.satisfies("+nccl"):
            args.append(self.define("NCCL_ROOT", spec["nccl"].prefix))
        if spec.satisfies("+kokkoskernels"):
            args.append(self.define("KokkosKernels_ROOT", spec["kokkos-kernels"].prefix))
        # Hopper's wgmma needs code compiled for sm_90a: the project's CMake
        # turns Kokkos' sm_90 into sm_90a when asked. Team scratch beyond 48
        # KiB (the fast CUDA tile shapes) needs Kokkos >= 5.2 (or our patched
        # 3.4, not spack's): the smaller shapes otherwise.
        hopper = spec.satisfies("+cuda cuda_arch=90") or spec.satisfies("+cuda cuda_arch=90a")
        args.append(self.define("KokkosMoE_ENABLE_CUDA_WGMMA", hopper))
        args.append(self.define("KokkosMoE_ENABLE_CUDA_LARGE_TEAM_SCRATCH",
                                spec.satisfies("+cuda ^kokkos@5.2:")))
        # AMD's matrix cores (MFMA) on CDNA2 and CDNA3: the CDNA fragment;
        # other AMD GPUs keep the portable one.
        args.append(self.define("KokkosMoE_ENABLE_HIP_MATRIX_CORES", any(
            spec.satisfies(f"+rocm amdgpu_target={t}") for t in self.cdna_targets)))
        if spec.satisfies("+cuda"):
            args.append(self.define("CMAKE_CXX_COMPILER", self._kokkos_cxx()))
        elif spec.satisfies("+rocm"):
            args.append(self.define("CMAKE_CXX_COMPILER", spec["hip"].hipcc))
        return args

    def _kokkos_cxx(self):
        """The compiler Kokkos was built with (nvcc_wrapper for CUDA): the
        nvcc_wrapper of an external Kokkos (it has no kokkos-nvcc-wrapper
        dependency to name it); otherwise a property of the kokkos package in
        current spack, an attribute that its setup_dependent_package set on
        the spec before."""
        kokkos = self.spec["kokkos"]
        wrapper = os.path.join(kokkos.prefix, "bin", "nvcc_wrapper")
        if kokkos.external and os.path.exists(wrapper):
            return wrapper
        cxx = getattr(kokkos.package, "kokkos_cxx", None)
        return cxx if cxx else kokkos.kokkos_cxx

    @run_before("cmake")
    def check_kokkos_34(self):
        """CUDA 12+ with Kokkos 3.4 only through our patched build, declared
        as an external (spack's kokkos 3.4 lacks cmake/patches)."""
        spec = self.spec
        if spec.satisfies("+cuda ^kokkos@3.4 ^cuda@12:") and not spec["kokkos"].external:
            raise InstallError(
                "Kokkos 3.4 needs cmake/patches for CUDA 12+: build it with scripts/deps.sh "
                "and declare it as an external (docs/building.md), or take kokkos@5.2")

    def check(self):
        """The unit tests (GoogleTest under CTest) of the build tree, once:
        spack runs check after the build when tests are asked for
        (--test=root)."""
        if not self.spec.satisfies("+tests"):
            return
        # The build directory is the builder's: spack 0.22-0.23 call check
        # on the package (its builder has it), later spack where self has it.
        build_directory = getattr(self, "build_directory", None) or self.builder.build_directory
        with working_dir(build_directory):
            ctest("--output-on-failure")
