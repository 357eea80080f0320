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
  - spack.yaml parses and names the recipe's repository and package;
  - the language dependencies suit the spack versions the recipe states it
    supports (MINIMUM_SPACK): loaded as spack 0.22 / 0.23.0.dev load it
    (SUPPORTED_LANGUAGES without "c"), it asks for no language those lack;
    loaded as later spack, it asks for every language of project();
  - no conflicts() on a dependency whose message recommends an external
    (a conflict cannot tell an external from spack's own build of it);
  - the Kokkos versions the recipe accepts include one that each spack's
    kokkos recipe has (SPACK_KOKKOS_RECIPES), and spack.yaml requires none
    that a supported spack's kokkos recipe lacks, unless spack.yaml declares
    it as an external;
  - with --test=root the unit tests run exactly once (spack's build-time
    check and any run_after test method together);
  - spack develop's build-<arch>-<hash> link in the checkout is ignored by
    git (when git is at hand).

    check_recipe.py [REPO_ROOT]          (default: two levels up)
Exit code 0 when consistent, 1 with one line per problem otherwise.
"""
import importlib.util
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the recipe repository
ROOT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]
RECIPE = ROOT / "spack" / "packages" / "kokkos-moe" / "package.py"
calls = {"variant": [], "depends_on": [], "conflicts": [], "version": []}
test_runs = []  # the test commands run by the simulated --test=root

# The Kokkos release lines .ci/run builds and tests: 3.4 by scripts/deps.sh
# (its kokkos_version), 4.5 (with Kokkos Kernels) and 5.2 (without) by
# scripts/compat.sh.
TESTED_LINES = {"kokkos": {"3.4", "4.5", "5.2"}, "kokkos-kernels": {"3.4", "4.5"}}

# The versions that spack's own kokkos and kokkos-kernels recipes have (not
# develop/master), by the spack versions the recipe supports; any other
# version is only met by an external (an installed Kokkos in packages.yaml).
SPACK_KOKKOS_RECIPES = {
    # spack 0.23.0.dev0 of June 2024 (var/spack/repos/builtin): ends at 4.3.01.
    "spack 0.23.0.dev0 (June 2024) builtin": {
        "kokkos": "4.3.01 4.3.00 4.2.01 4.2.00 4.1.00 4.0.01 4.0.00 3.7.02 3.7.01 3.7.00 "
                  "3.6.01 3.6.00 3.5.00 3.4.01 3.4.00 3.3.01 3.3.00 3.2.01 3.2.00 3.1.01 "
                  "3.1.00 3.0.00".split(),
        "kokkos-kernels": "4.3.01 4.3.00 4.2.01 4.2.00 4.1.00 4.0.01 4.0.00 3.7.01 3.7.00 "
                          "3.6.01 3.6.00 3.5.00 3.4.01 3.4.00 3.3.01 3.3.00 3.2.01 3.2.00 "
                          "3.1.00 3.0.00".split(),
    },
    # spack-packages of July 2026 (repos/spack_repo/builtin): 3.7.02 to 5.1.1.
    "spack-packages (July 2026)": {
        "kokkos": "5.1.1 5.1.0 5.0.2 5.0.1 5.0.0 4.7.04 4.7.03 4.7.02 4.7.01 4.7.00 4.6.02 "
                  "4.6.01 4.6.00 4.5.01 4.5.00 4.4.01 4.4.00 4.3.01 4.3.00 4.2.01 4.2.00 "
                  "4.1.00 4.0.01 4.0.00 3.7.02".split(),
        "kokkos-kernels": "5.1.1 5.1.0 5.0.2 5.0.1 5.0.0 4.7.04 4.7.03 4.7.02 4.7.01 4.7.00 "
                          "4.6.02 4.6.01 4.6.00 4.5.01 4.5.00 4.4.01 4.4.00 4.3.01 4.3.00 "
                          "4.2.01 4.2.00 4.1.00 4.0.01 4.0.00 3.7.02".split(),
    },
}

# The language dependencies of spack 0.22 and the 0.23 development snapshots
# up to mid-2024 (spack.directives.SUPPORTED_LANGUAGES): anything else, "c"
# included, is an unknown package there ("Package 'c' not found").
OLD_SPACK_LANGUAGES = ("fortran", "cxx")
LANGUAGES = ("c", "cxx", "fortran")

# The project's public repository (an https://... prefix), None while there is
# none: then the recipe names no homepage, url or git and builds from a
# checkout (spack develop).
PUBLIC_REPOSITORY = None


def record(name):
    def directive(*args, **kwargs):
        calls[name].append((args, kwargs))
    return directive


def marker(attribute):
    """run_after/run_before/on_package_attributes: mark the method."""
    def decorator_factory(*args, **kwargs):
        def mark(f):
            setattr(f, attribute, (args, kwargs))
            return f
        return mark
    return decorator_factory


class InstallError(Exception):
    pass


class working_dir:
    def __init__(self, path):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def ctest(*args):
    test_runs.append("ctest " + " ".join(args))


def make(*args, **_kwargs):
    if "test" in args:
        test_runs.append("make test")


class Spec:
    """Enough of a concrete spec for cmake_args: variants and prefixes."""

    def __init__(self, text, external=()):
        self.text = text
        self.prefix = "/opt/" + text.split()[0].lstrip("+~")
        self.externals = external
        self.external = self.text.split()[0] in external

    def satisfies(self, constraint):
        return all(part in self.text.split() for part in constraint.split())

    def __getitem__(self, name):
        dep = Spec(name, self.externals)
        # Current spack: kokkos_cxx on the package; hip's hipcc on the spec.
        dep.package = types.SimpleNamespace(kokkos_cxx="/opt/kokkos/bin/nvcc_wrapper")
        dep.hipcc = "/opt/hip/bin/hipcc"
        return dep


class CMakePackage:
    build_directory = "/tmp/spack-build"

    def __init__(self, spec):
        self.spec = spec

    def check(self):
        """Spack's CMake build-time test: the project's test target, which
        exists when its tests are built (KokkosMoE_ENABLE_TESTS)."""
        if "-DKokkosMoE_ENABLE_TESTS=ON" in self.cmake_args():
            make("test")

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


def stub_spack(languages):
    """Stub spack modules; languages: spack.directives.SUPPORTED_LANGUAGES,
    None for a spack without that list (0.23.0 and later)."""
    package = types.ModuleType("spack.package")
    for name in calls:
        setattr(package, name, record(name))
    package.license = lambda *a, **k: None
    package.CMakePackage, package.CudaPackage, package.ROCmPackage = (
        CMakePackage, CudaPackage, ROCmPackage)
    package.run_after = marker("_run_after")
    package.run_before = marker("_run_before")
    package.on_package_attributes = marker("_on_package_attributes")
    package.working_dir, package.ctest, package.make = working_dir, ctest, make
    package.InstallError = InstallError
    package.__all__ = [n for n in vars(package) if not n.startswith("_")]
    directives = types.ModuleType("spack.directives")
    if languages is not None:
        directives.SUPPORTED_LANGUAGES = languages
    spack = types.ModuleType("spack")
    spack.package, spack.directives = package, directives
    sys.modules.update({"spack": spack, "spack.package": package, "spack.directives": directives})


def load_recipe(languages=None):
    """The recipe's class and module as a spack with these languages loads
    them; calls holds its directives."""
    for name in calls:
        calls[name] = []
    stub_spack(languages)
    spec = importlib.util.spec_from_file_location("kokkos_moe_package", RECIPE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.KokkosMoe, module


def version_tuple(text):
    return tuple(int(p) if p.isdigit() else p for p in text.split("."))


def version_satisfies(version, constraint):
    """Spack's version semantics, enough here: "3.4" holds 3.4.01, "=3.4.01"
    only itself, "4.0:4.6" every 4.0.x to 4.6.x, a list any of its items."""
    v = version_tuple(version)
    for item in constraint.split(","):
        item = item.strip()
        if item.startswith("="):
            if version == item[1:]:
                return True
        elif ":" in item:
            lo, hi = (version_tuple(x) if x else None for x in item.split(":", 1))
            if (lo is None or v >= lo) and (hi is None or v[:len(hi)] <= hi):
                return True
        elif v[:len(version_tuple(item))] == version_tuple(item):
            return True
    return False


def spec_versions(spec, package):
    """The version constraints a spec string puts on package ("@..." of
    the spec itself when it names package or is anonymous, "^package@...")."""
    found = []
    text = str(spec).strip()
    if m := re.match(rf"^(?:{re.escape(package)})?@([^\s+~^%]+)", text):
        found.append(m.group(1))
    found += re.findall(rf"\^{re.escape(package)}@([^\s+~^%]+)", text)
    return found


def test_commands(recipe):
    """The test commands a --test=root install of +tests runs: spack's
    build-time check, then the run_after methods (build, install) that ask
    for tests."""
    test_runs.clear()
    pkg = recipe.__new__(recipe)
    CMakePackage.__init__(pkg, Spec("kokkos-moe +openmp +trace +fortran +tests"))
    pkg.used_variants = set()
    pkg.check()
    methods = [getattr(recipe, n) for n in dir(recipe) if callable(getattr(recipe, n, None))]
    for phase in ("build", "install"):
        for method in methods:
            after = getattr(method, "_run_after", None)
            if after and after[0][:1] == (phase,):
                method(pkg)
    return list(test_runs)


def run_before_errors(recipe, text, externals=()):
    """The InstallErrors of the recipe's run_before methods for a spec."""
    pkg = recipe.__new__(recipe)
    CMakePackage.__init__(pkg, Spec(text, externals))
    errors = []
    for name in dir(recipe):
        method = getattr(recipe, name, None)
        if callable(method) and getattr(method, "_run_before", None):
            try:
                method(pkg)
            except InstallError as e:
                errors.append(str(e))
    return errors


def git_ignores(path):
    """Whether git ignores path in ROOT (None without git or a work tree)."""
    if not shutil.which("git") or not (ROOT / ".git").exists():
        return None
    run = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", "--no-index", path],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return {0: True, 1: False}.get(run.returncode)


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

    # Languages, as spack 0.22 / 0.23.0.dev (June 2024) loads the recipe:
    # only the languages it knows, unless the recipe states a newer minimum.
    recipe, module = load_recipe(OLD_SPACK_LANGUAGES)
    minimum = getattr(module, "MINIMUM_SPACK", None)
    if minimum is None:
        problems.append("the recipe states no minimum spack version (MINIMUM_SPACK)")
    old_spack = minimum is None or version_tuple(minimum) < (0, 23)
    for args, _ in calls["depends_on"]:
        name = re.split(r"[@+~\s]", str(args[0]), 1)[0]
        if old_spack and name in LANGUAGES and name not in OLD_SPACK_LANGUAGES:
            problems.append(f"depends_on({args[0]!r}) on spack {minimum or '(no MINIMUM_SPACK)'}: "
                            f"spack before 0.23.0 knows the languages {', '.join(OLD_SPACK_LANGUAGES)} "
                            f"only (\"Package '{name}' not found\"); state MINIMUM_SPACK 0.23 "
                            "or depend on it only where spack knows it")

    # The rest as later spack loads it (every language known).
    recipe, module = load_recipe(None)
    project = re.search(r"project\([^)]*LANGUAGES([^)]*)\)", (ROOT / "CMakeLists.txt").read_text())
    cmake_languages = {"C": "c", "CXX": "cxx", "Fortran": "fortran"}
    for language in (project.group(1).split() if project else []):
        name = cmake_languages.get(language)
        if name and not any(str(a[0][0]) == name for a in calls["depends_on"]):
            problems.append(f"project() enables {language}, but the recipe has no depends_on({name!r}) "
                            "on spack that knows it")
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
    # Tests with --test=root: run once.
    runs = test_commands(recipe)
    if not runs:
        problems.append("spack install --test=root of +tests runs no tests "
                        "(check or a run_after('install') method)")
    elif len(runs) > 1:
        problems.append(f"spack install --test=root of +tests runs the tests {len(runs)} times "
                        f"({'; '.join(runs)}): spack's check and a run_after method both run them")

    # Conflicts: none may refuse what its own message recommends. A conflict
    # on a dependency also refuses an external of it (the concretizer cannot
    # tell spack's build from an external), so a message that sends users to
    # an external contradicts its conflict.
    for args, kwargs in calls["conflicts"]:
        msg = str(kwargs.get("msg", ""))
        if str(args[0]).startswith("^") and re.search(r"\bexternals?\b", msg, re.I):
            problems.append(f"conflicts({args[0]!r}, when={kwargs.get('when')!r}) also refuses an "
                            f"external {args[0][1:]}, which its message recommends: {msg!r}")
    # The one place spack's unpatched Kokkos 3.4 meets CUDA 12+: refused
    # before the build unless Kokkos is an external (our patched build).
    cuda_34 = "kokkos-moe +cuda cuda_arch=90 ~openmp ^kokkos@3.4 ^cuda@12:"
    refused_by_conflict = any(str(a[0][0]).startswith("^kokkos@3.4") and "+cuda" in str(a[1].get("when", ""))
                              for a in calls["conflicts"])
    if not refused_by_conflict and not run_before_errors(recipe, cuda_34):
        problems.append("+cuda with spack's own kokkos@3.4 and CUDA 12+ is not refused "
                        "(it lacks cmake/patches)")
    if run_before_errors(recipe, cuda_34, externals=("kokkos",)):
        problems.append("+cuda with an external (patched) kokkos@3.4 and CUDA 12+ is refused")

    # Versions: exactly the tested release lines.
    for package, lines in TESTED_LINES.items():
        accepted = [a[0][0].split("@", 1)[1] for a in calls["depends_on"]
                    if a[0][0].startswith(package + "@")]
        if not accepted:
            problems.append(f"no version range for {package}")
        for versions in accepted:
            if set(versions.split(",")) != lines:
                problems.append(f"{package}@{versions}: CI tests the lines {sorted(lines)}")
            for spack_name, known in SPACK_KOKKOS_RECIPES.items():
                if not any(version_satisfies(v, versions) for v in known[package]):
                    problems.append(f"{package}@{versions}: {spack_name}'s {package} recipe has none "
                                    "of these versions (only externals could meet it)")
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
    # Kokkos versions the environment asks for: each in every supported
    # spack's kokkos recipe, or declared as an external in spack.yaml.
    packages = env.get("packages") or {}
    for package in ("kokkos", "kokkos-kernels"):
        config = packages.get(package) or {}
        requires = config.get("require") or []
        requires = [requires] if isinstance(requires, (str, dict)) else requires
        texts = [r.get("spec", "") if isinstance(r, dict) else r for r in requires]
        texts += [str(s) for s in env.get("specs", [])]
        externals = [str(e.get("spec", "")) for e in config.get("externals") or []]
        for text in texts:
            for constraint in spec_versions(text, package):
                if any(version_satisfies(v, constraint) for e in externals
                       for v in spec_versions(e, package)):
                    continue
                for spack_name, known in SPACK_KOKKOS_RECIPES.items():
                    if not any(version_satisfies(v, constraint) for v in known[package]):
                        problems.append(f"spack.yaml: {package}@{constraint} ({text!r}): {spack_name}'s "
                                        f"{package} recipe has no such version and spack.yaml "
                                        "declares no external for it")
    # spack develop links build-<arch>-<hash> (a symlink, not a directory)
    # into the checkout.
    link = "build-linux-debian12-x86_64_v3-abcdefg"
    if git_ignores(link) is False:
        problems.append(f".gitignore: spack develop's link {link} is not ignored "
                        "(a pattern ending in / matches directories only)")

    for p in problems:
        print("spack recipe:", p)
    print(f"spack recipe: {len(variants)} variants, {len(calls['depends_on'])} dependencies, "
          f"options {', '.join(sorted(set_options))}: {'FAILED' if problems else 'consistent'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
