#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks the spack recipe and environment without spack.

Imports spack/packages/kokkos-moe/package.py with stub `spack.package`
directives that record their calls, then checks that
  - every KokkosMoE_ENABLE_* option cmake_args sets is an option() of the
    project's CMake files, and every such option is set by cmake_args;
  - every variant is used (in cmake_args, a dependency or a conflict);
  - the kokkos and kokkos-kernels versions it accepts are the release lines
    CI builds and tests (TESTED_LINES);
  - backend variants constrain kokkos the same way (cuda_arch and
    amdgpu_target propagated for every value);
  - cmake_args evaluates for the host, CUDA and ROCm specs;
  - the recipe's homepage, url and git are PUBLIC_REPOSITORY's or absent,
    and every version() names a source the recipe has (git for a branch,
    tag or commit; url for a checksum);
  - spack.yaml parses and names the recipe's repository and package.

    check_recipe.py [REPO_ROOT]          (default: two levels up)
Exit code 0 when consistent, 1 with one line per problem otherwise.
"""
import importlib.util
import re
import sys
import types
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the recipe repository
ROOT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]
RECIPE = ROOT / "spack" / "packages" / "kokkos-moe" / "package.py"
calls = {"variant": [], "depends_on": [], "conflicts": [], "version": []}

# The Kokkos release lines .ci/run builds and tests: 3.4 by scripts/deps.sh
# (its kokkos_version), 4.5 (with Kokkos Kernels) and 5.2 (without) by
# scripts/compat.sh.
TESTED_LINES = {"kokkos": {"3.4", "4.5", "5.2"}, "kokkos-kernels": {"3.4", "4.5"}}

# The project's public repository (an https://... prefix), None while there is
# none: then the recipe names no homepage, url or git and builds from a
# checkout (spack develop).
PUBLIC_REPOSITORY = None


def record(name):
    def directive(*args, **kwargs):
        calls[name].append((args, kwargs))
    return directive


def passthrough_decorator(*_args, **_kwargs):
    return lambda f: f


class Spec:
    """Enough of a concrete spec for cmake_args: variants and prefixes."""

    def __init__(self, text):
        self.text = text
        self.prefix = "/opt/" + text.split()[0].lstrip("+~")

    def satisfies(self, constraint):
        return all(part in self.text.split() for part in constraint.split())

    def __getitem__(self, name):
        dep = Spec(name)
        # Current spack: kokkos_cxx on the package; hip's hipcc on the spec.
        dep.package = types.SimpleNamespace(kokkos_cxx="/opt/kokkos/bin/nvcc_wrapper")
        dep.hipcc = "/opt/hip/bin/hipcc"
        return dep


class CMakePackage:
    def __init__(self, spec):
        self.spec = spec

    def define(self, name, value):
        if isinstance(value, bool):
            value = "ON" if value else "OFF"
        return f"-D{name}={value}"

    def define_from_variant(self, name, variant):
        self.used_variants.add(variant)
        return self.define(name, self.spec.satisfies("+" + variant))


class CudaPackage:
    cuda_arch_values = ("70", "80", "90", "90a")


class ROCmPackage:
    amdgpu_targets = ("gfx90a", "gfx942")


def stub_spack():
    package = types.ModuleType("spack.package")
    for name in calls:
        setattr(package, name, record(name))
    package.license = lambda *a, **k: None
    package.CMakePackage, package.CudaPackage, package.ROCmPackage = (
        CMakePackage, CudaPackage, ROCmPackage)
    package.run_after = passthrough_decorator
    package.on_package_attributes = passthrough_decorator
    package.working_dir = None
    package.ctest = None
    package.__all__ = [n for n in vars(package) if not n.startswith("_")]
    spack = types.ModuleType("spack")
    spack.package = package
    sys.modules["spack"], sys.modules["spack.package"] = spack, package


def load_recipe():
    stub_spack()
    spec = importlib.util.spec_from_file_location("kokkos_moe_package", RECIPE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.KokkosMoe


def cmake_options():
    options = set()
    for path in [ROOT / "CMakeLists.txt", *ROOT.glob("src/**/CMakeLists.txt"),
                 *ROOT.glob("cmake/*.cmake")]:
        text = path.read_text()
        options |= set(re.findall(r"^\s*(?:cmake_dependent_)?option\(\s*(KokkosMoE_\w+)", text, re.M))
        # Cache variables of other types (a string: KokkosMoE_HOST_ARCH).
        options |= set(re.findall(r"^\s*set\(\s*(KokkosMoE_\w+)\s[^)]*\bCACHE\b", text, re.M))
    return options


def spec_strings(args):
    """The spec strings of a directive call: positional and when=."""
    return " ".join([str(a) for a in args[0]] + [str(args[1].get("when", ""))])


def parse_yaml(text):
    try:
        import yaml
        return yaml.safe_load(text)
    except ImportError:  # a top-level key and its list items are enough here
        data, key = {}, None
        for line in text.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if re.match(r"^\S.*:\s*$", line):
                data[line.strip()[:-1]] = {}
            elif m := re.match(r"^  (\w+):\s*$", line):
                key = m.group(1)
            elif m := re.match(r"^  - (.+)$", line):
                data.setdefault("spack", {}).setdefault(key, []).append(m.group(1).strip())
        return data


def main():
    problems = []
    recipe = load_recipe()
    variants = {args[0][0] for args in calls["variant"]} | {"cuda", "rocm"}

    # cmake_args for the three backends; the options it sets.
    set_options = set()
    used = set()
    for text in ("kokkos-moe +openmp +trace +fortran +tests",
                 "kokkos-moe +cuda cuda_arch=90 ~openmp",
                 "kokkos-moe +rocm amdgpu_target=gfx90a ~openmp"):
        pkg = recipe.__new__(recipe)
        CMakePackage.__init__(pkg, Spec(text))
        pkg.used_variants = set()
        args = pkg.cmake_args()
        used |= pkg.used_variants
        set_options |= {m.group(1) for a in args if (m := re.match(r"-D(KokkosMoE_\w+)=", a))}
        if "+cuda" in text and "-DCMAKE_CXX_COMPILER=/opt/kokkos/bin/nvcc_wrapper" not in args:
            problems.append("cmake_args: +cuda does not set CMAKE_CXX_COMPILER to kokkos_cxx")
        if "+rocm" in text and "-DCMAKE_CXX_COMPILER=/opt/hip/bin/hipcc" not in args:
            problems.append("cmake_args: +rocm does not set CMAKE_CXX_COMPILER to hipcc")
    options = cmake_options()
    problems += [f"cmake_args sets {o}, which no CMake file declares with option() or as a cache variable"
                 for o in sorted(set_options - options)]
    problems += [f"CMake option {o} is not set by cmake_args"
                 for o in sorted({o for o in options if o.startswith("KokkosMoE_ENABLE_")} - set_options)]

    # Every variant used: in cmake_args or in a directive's spec or condition.
    directives = " ".join(spec_strings(a) for n in ("depends_on", "conflicts") for a in calls[n])
    for v in sorted(variants - used):
        if not re.search(rf"\+{v}\b", directives):
            problems.append(f"variant {v} is used neither by cmake_args nor by any directive")

    # Backends: kokkos with the same backend, every GPU architecture propagated.
    deps = [spec_strings(a) for a in calls["depends_on"]]
    for backend, kokkos in (("cuda", "kokkos+cuda"), ("rocm", "kokkos+rocm"), ("openmp", "kokkos+openmp")):
        if not any(d.startswith(kokkos) and f"+{backend}" in d for d in deps):
            problems.append(f"+{backend} does not require {kokkos}")
    for arch in CudaPackage.cuda_arch_values:
        kokkos_arch = arch.rstrip("a")  # spack's kokkos has no arch-specific 90a
        if not any(f"kokkos cuda_arch={kokkos_arch} " in d + " " and f"+cuda cuda_arch={arch}" in d
                   for d in deps):
            problems.append(f"cuda_arch={arch} is not propagated to kokkos as {kokkos_arch}")
    for target in ROCmPackage.amdgpu_targets:
        if not any(f"kokkos amdgpu_target={target}" in d for d in deps):
            problems.append(f"amdgpu_target={target} is not propagated to kokkos")
    for dep, variant in (("hdf5", "trace"), ("googletest", "tests")):
        if not any(d.startswith(dep) and f"+{variant}" in d for d in deps):
            problems.append(f"{dep} is not a dependency when +{variant}")
    # Sources: no made-up places; versions only with a source to fetch them from.
    for attr in ("homepage", "url", "git", "list_url"):
        value = getattr(recipe, attr, None)
        if value is None:
            continue
        if PUBLIC_REPOSITORY is None:
            problems.append(f"{attr} = {value!r}, but there is no public repository "
                            "(PUBLIC_REPOSITORY): build from a checkout with spack develop")
        elif not str(value).startswith(PUBLIC_REPOSITORY):
            problems.append(f"{attr} = {value!r} is not under {PUBLIC_REPOSITORY}")
    for args, kwargs in calls["version"]:
        needs = "git" if {"branch", "tag", "commit"} & set(kwargs) else "url"
        if getattr(recipe, needs, None) is None and needs not in kwargs:
            problems.append(f"version({args[0]!r}) has no source: the recipe has no {needs}")
    if not hasattr(recipe, "check_install") and not hasattr(recipe, "check"):
        problems.append("no install-time tests (check or a run_after('install') method)")

    # Versions: exactly the tested release lines.
    for package, lines in TESTED_LINES.items():
        accepted = [a[0][0].split("@", 1)[1] for a in calls["depends_on"]
                    if a[0][0].startswith(package + "@")]
        if not accepted:
            problems.append(f"no version range for {package}")
        for versions in accepted:
            if set(versions.split(",")) != lines:
                problems.append(f"{package}@{versions}: CI tests the lines {sorted(lines)}")
    deps_line = re.search(r"^kokkos_version=(\d+\.\d+)", (ROOT / "scripts" / "deps.sh").read_text(), re.M)
    if not deps_line or deps_line.group(1) not in TESTED_LINES["kokkos"]:
        problems.append("scripts/deps.sh builds a Kokkos line outside TESTED_LINES")

    # The environment.
    env = parse_yaml((ROOT / "spack.yaml").read_text()).get("spack", {})
    if not any(str(s).startswith("kokkos-moe") for s in env.get("specs", [])):
        problems.append("spack.yaml: no kokkos-moe spec")
    if "./spack" not in [str(r) for r in env.get("repos", [])]:
        problems.append("spack.yaml: the recipe repository ./spack is not listed in repos")
    if "namespace: kokkos_moe" not in (ROOT / "spack" / "repo.yaml").read_text():
        problems.append("spack/repo.yaml: namespace is not kokkos_moe")

    for p in problems:
        print("spack recipe:", p)
    print(f"spack recipe: {len(variants)} variants, {len(calls['depends_on'])} dependencies, "
          f"options {', '.join(sorted(set_options))}: {'FAILED' if problems else 'consistent'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
