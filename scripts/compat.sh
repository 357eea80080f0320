#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds KokkosMoE in a debootstrapped Debian sid root, from sid's binary
# packages (../shared/notes/kokkos-versions.md): against a newer Kokkos than
# the 3.4.01 of scripts/deps.sh, running its host tests (CTest) and the main
# job (the replay driver on inputs/ with --check, as scripts/run.sh does), or
# with a current ROCm, compiling and linking its HIP backend:
#
#   scripts/compat.sh kokkos5   Kokkos 5.2.2 (libkokkos-dev), OpenMP, no Kokkos Kernels
#   scripts/compat.sh kokkos4   Kokkos + Kokkos Kernels 4.5.1 (Trilinos 16.1), Serial
#   scripts/compat.sh rocm      HIP + Serial with sid's hipcc (ROCm 7.0's, clang 21),
#                               for gfx942 and gfx950: library, tests and drivers,
#                               compiled and linked (no AMD GPU here), no Kokkos Kernels
#
# rocm: Debian packages Kokkos for OpenMP only, so a HIP Kokkos is built in
# the root, one per arch (Kokkos takes one GPU arch a build), from Debian's
# kokkos source package of sid (libkokkos-dev's version) where the mirror
# serves it, else from Kokkos 3.4.01 in bookworm's trilinos 13.2.0 source
# with our patches (cmake/patches, as scripts/deps.sh) and the arch options
# of kokkos34_for_rocm below. Each build's device code is then checked in
# the root with scripts/hip_isa.py (MFMA in every expert kernel, no spills
# to memory; the root's LLVM tools), whose failure fails the mode.
#
# Everything lives under the cache root, nothing in the clone (bind-mounted
# read-only at /src inside the root, ../shared/traces at /shared/traces):
#   $CACHE/compat-<mode>-<hash>/root     the sid root; <hash> covers the package
#                                        list and this script's root-making part
#   $CACHE/compat-<mode>-<hash>/build    the build tree (ctest.log, main-job.log;
#                                        rocm: one build tree a gfx arch)
#   $CACHE/compat-<mode>-ccache          ccache's cache, kept across roots
#   $CACHE/compat-debs                   the downloaded .debs, for all modes
#   $CACHE/kokkos-<version>-rocm-<gfx>-<hash>
#                                        rocm: Kokkos' install (at the same path
#                                        under /kokkos in the root); <hash> covers
#                                        its CMake options, patches and hipcc
#   $CACHE/src                           rocm: Kokkos' source (trilinos-13.2.0
#                                        is scripts/deps.sh's too)
# A root with its .complete marker is reused (seconds); otherwise it is made
# with debootstrap and apt (1-3 minutes, under one with the .deb cache). Roots
# and rocm Kokkos installs of another <hash> are removed at the end of the
# run. proc, /dev, /dev/pts, /src, /build, /ccache (and /shared/traces; rocm:
# the Kokkos installs) are mounted for the run and always unmounted at exit;
# mounts a killed run left behind are unmounted first. Delete
# $CACHE/compat-<mode>-* to take a newer sid.
#
# Prints the time of each part (root, configure, build, tests, main job;
# rocm: root, then Kokkos, configure, build and check for each arch) and
# CTest's summary. Exit code non-zero when the root, the build, a test, the
# main job or a check fails. Needs root (debootstrap, chroot, mount) and
# installs debootstrap on the host with apt when missing.
#
# Environment:
#   KOKKOS_MOE_CACHE        cache root (default ~/.cache/kokkos-moe)
#   KOKKOS_MOE_MIRROR       Debian mirror for sid (default: the one the system's
#                           apt sources name for its own release)
#   JOBS                    parallel compile and test jobs (default: nproc)
#   KOKKOS_MOE_ROCM_ARCHS   rocm: the gfx archs (default "gfx942 gfx950")
#   KOKKOS_MOE_ROCM_KOKKOS  rocm: sid (Debian's kokkos source, or fail), 3.4
#                           (trilinos 13.2.0's), or auto (default: sid where
#                           the mirror serves it, else 3.4)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
cache=${KOKKOS_MOE_CACHE:-$HOME/.cache/kokkos-moe}
jobs=${JOBS:-$(nproc)}
mode=${1:-}
apt_opts=(-o Acquire::Check-Valid-Until=false -o Acquire::Check-Date=false
  -o DPkg::Lock::Timeout=600 -q -y)

usage() { echo "usage: $0 kokkos5|kokkos4|rocm" >&2; exit 2; }
log() { echo "[compat $mode] $*"; }
die() { echo "[compat $mode] error: $*" >&2; exit 1; }

if [ "$(id -u)" != 0 ]; then
  exec sudo KOKKOS_MOE_CACHE="$cache" JOBS="$jobs" \
    ${KOKKOS_MOE_MIRROR:+KOKKOS_MOE_MIRROR="$KOKKOS_MOE_MIRROR"} \
    ${KOKKOS_MOE_ROCM_ARCHS:+KOKKOS_MOE_ROCM_ARCHS="$KOKKOS_MOE_ROCM_ARCHS"} \
    ${KOKKOS_MOE_ROCM_KOKKOS:+KOKKOS_MOE_ROCM_KOKKOS="$KOKKOS_MOE_ROCM_KOKKOS"} "$0" "$@"
fi

# What the project needs in every root (scripts/deps.sh's list, ccache for
# the compiles, python3 for CTest's SpackRecipe test), then each mode's Kokkos
# (rocm: its compiler). The versions of shown_packages are printed, the
# first's checked against expected_version where one is set.
common_packages=(g++ gfortran cmake make ccache libhdf5-dev libgtest-dev
  libbenchmark-dev python3 ca-certificates)
source_suites=()  # deb-src entries, for the sources a mode builds
case $mode in
  kokkos5)
    packages=("${common_packages[@]}" libkokkos-dev)
    shown_packages=(libkokkos-dev)
    expected_version=5.2.  # the release line the spack recipe and docs name
    # Debian packages no Kokkos Kernels 5.
    cmake_args=(-DKokkosMoE_ENABLE_KOKKOSKERNELS=OFF)
    ;;
  kokkos4)
    # Trilinos' Kokkos Kernels links BLAS and LAPACK but does not depend on them.
    packages=("${common_packages[@]}" libtrilinos-kokkos-dev
      libtrilinos-kokkos-kernels-dev liblapack-dev libblas-dev)
    shown_packages=(libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev)
    expected_version=16.1.  # Trilinos 16.1: Kokkos and Kokkos Kernels 4.5
    # The compiler's baseline instruction set (x86-64: SSE2): the host
    # fragments' narrowest vectors, tested here; the other builds are native.
    cmake_args=(-DKokkosMoE_ENABLE_KOKKOSKERNELS=ON -DKokkosMoE_HOST_ARCH=baseline)
    ;;
  rocm)
    # hipcc pulls in clang, lld, the device libraries and libamdhip64-dev;
    # patch applies cmake/patches to Kokkos 3.4 (build_kokkos).
    packages=("${common_packages[@]}" hipcc libamdhip64-dev patch)
    shown_packages=(hipcc libamdhip64-dev)
    expected_version=
    # Kokkos' sources: sid's kokkos, bookworm's trilinos (kokkos_source).
    source_suites=(sid bookworm)
    read -r -a rocm_archs <<<"${KOKKOS_MOE_ROCM_ARCHS:-gfx942 gfx950}"
    [ ${#rocm_archs[@]} -gt 0 ] || die "KOKKOS_MOE_ROCM_ARCHS names no arch"
    for gfx in "${rocm_archs[@]}"; do
      case $gfx in
        gfx90a | gfx942 | gfx950) ;;  # those kokkos_arch knows
        *) die "KOKKOS_MOE_ROCM_ARCHS: no Kokkos arch for $gfx here (gfx90a, gfx942, gfx950)" ;;
      esac
    done
    rocm_kokkos=${KOKKOS_MOE_ROCM_KOKKOS:-auto}
    case $rocm_kokkos in
      auto | sid | 3.4) ;;
      *) die "KOKKOS_MOE_ROCM_KOKKOS=$rocm_kokkos: auto, sid or 3.4" ;;
    esac
    # Library, tests and drivers; not the benchmarks (compile time, and
    # nothing here runs them). No Kokkos Kernels: Debian has none for HIP.
    cmake_args=(-DCMAKE_CXX_COMPILER=hipcc -DKokkosMoE_ENABLE_KOKKOSKERNELS=OFF
      -DKokkosMoE_ENABLE_BENCHMARKS=OFF -DKokkosMoE_ENABLE_MPI=OFF)
    ;;
  *) usage ;;
esac

# The Debian mirror the system's apt sources use for its own release
# (deb822 .sources first, then one-line .list files).
debian_mirror() {
  if [ -n "${KOKKOS_MOE_MIRROR:-}" ]; then
    echo "$KOKKOS_MOE_MIRROR"
    return
  fi
  local codename f uri=
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uri=$(awk -v cn="$codename" 'BEGIN { RS = ""; FS = "\n" }
      { types = uris = suites = ""; enabled = "yes"
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^Types:/) types = $i
          else if ($i ~ /^URIs:/) uris = $i
          else if ($i ~ /^Suites:/) suites = $i
          else if ($i ~ /^Enabled:/) enabled = tolower($i)
        }
        if (types ~ /[ \t]deb([ \t]|$)/ && enabled !~ /no/ &&
            (" " suites " ") ~ ("[ \t]" cn "[ \t]")) {
          sub(/^URIs:[ \t]*/, "", uris); split(uris, u, /[ \t]+/); print u[1]; exit
        } }' "$f")
    [ -n "$uri" ] && break
  done
  if [ -z "$uri" ]; then
    uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      sed -n "s/^deb[ \t]\+\(\[[^]]*\][ \t]\+\)\?\([^ \t]\+\)[ \t]\+${codename}[ \t].*/\2/p" |
      head -n 1)
  fi
  [ -n "$uri" ] || die "no Debian mirror for '$codename' in the apt sources; set KOKKOS_MOE_MIRROR"
  echo "$uri"
}

# Mount points at or below $1, deepest first.
mounts_under() {
  awk -v p="$1" '{ m = $5; gsub(/\\040/, " ", m)
    if (m == p || index(m, p "/") == 1) print m }' /proc/self/mountinfo | sort -r
}

unmount_all() {
  local m
  while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m"
  done < <(mounts_under "$1")
  [ -z "$(mounts_under "$1")" ] || { echo "cannot unmount all under $1" >&2; return 1; }
}

# Only once nothing below is mounted: the clone is bind-mounted in a root, on
# the same file system (which --one-file-system would not notice).
remove_dir() {
  unmount_all "$1" || die "$1 is still mounted"
  rm -rf --one-file-system "$1"
}

in_root() {
  chroot "$rootdir" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    DEBIAN_FRONTEND=noninteractive "$@"
}

mount_root() {
  mount -t proc proc "$rootdir/proc"
  mount --bind /dev "$rootdir/dev"
  mount --bind /dev/pts "$rootdir/dev/pts"
}

# The root: minbase sid, then the packages with apt. The .debs are kept in
# $CACHE/compat-debs, shared by the modes, so that a new root (a new key, the
# other mode) downloads only what changed. Part of the key.
make_root() {
  mkdir -p "$debs/partial"
  echo "== $(date +%T) debootstrap"
  debootstrap --variant=minbase --cache-dir="$debs" sid "$rootdir" "$mirror"
  # The sid Release file may be past its Valid-Until (a snapshot mirror).
  printf 'Acquire::Check-Valid-Until "false";\nAcquire::Check-Date "false";\n' \
    >"$rootdir/etc/apt/apt.conf.d/99kokkos-moe"
  # A throwaway root: no fsync per file, no documentation.
  printf '%s\n' force-unsafe-io 'path-exclude=/usr/share/doc/*' \
    'path-exclude=/usr/share/man/*' 'path-exclude=/usr/share/info/*' \
    >"$rootdir/etc/dpkg/dpkg.cfg.d/kokkos-moe"
  mount_root
  mount --bind "$debs" "$rootdir/var/cache/apt/archives"
  local suite
  for suite in "${source_suites[@]}"; do
    echo "deb-src $mirror $suite main" >>"$rootdir/etc/apt/sources.list"
  done
  echo "== $(date +%T) apt-get update"
  in_root apt-get "${apt_opts[@]}" update
  echo "== $(date +%T) apt-get install"
  in_root apt-get "${apt_opts[@]}" install --no-install-recommends "${packages[@]}"
  echo "== $(date +%T) installed"
  in_root apt-get "${apt_opts[@]}" autoclean
  umount "$rootdir/var/cache/apt/archives"
  in_root apt-get clean
  fix_root
}

# Quirks of the packages (../shared/notes/kokkos-versions.md). Part of the key.
fix_root() {
  case $mode in
    kokkos5)
      # libkokkos-dev 5.2.2's CMake targets name libkokkosalgorithms.a and
      # libkokkossimd.a, which it does not ship: empty archives stand in.
      in_root bash -euc '
        core=$(dpkg -L libkokkos-dev | grep -m1 "/libkokkoscore\.\(so\|a\)$")
        for lib in kokkosalgorithms kokkossimd; do
          a=$(dirname "$core")/lib$lib.a
          if ! ls "${a%.a}".* >/dev/null 2>&1; then
            ar rcs "$a"
            echo "fix_root: empty $a"
          fi
        done'
      ;;
  esac
}

root_key() {
  { printf '%s\n' "$mode" "${packages[@]}" "${source_suites[@]}"
    declare -f make_root fix_root mount_root; } |
    sha256sum | cut -c1-12
}

now() { date +%s; }
timings=()
took() {  # part, start time[, note]
  local s=$(($(now) - $2))
  timings+=("$(printf '%-16s %4d s%s' "$1" "$s" "${3:+  ($3)}")")
  log "$1: ${s} s${3:+ ($3)}"
}

print_timings() {
  local t
  echo "== compat $mode: times"
  for t in "${timings[@]}"; do echo "  $t"; done
}

cleanup() {
  local rc=$?
  set +e
  [ -n "${keydir:-}" ] && unmount_all "$keydir"
  [ ${#timings[@]} -gt 0 ] && print_timings
  exit $rc
}

# Configures and builds the project in $1 (a path in the root) with the
# mode's CMake options and those after $2, timed as parts "configure$2" and
# "build$2".
configure_build() {
  local dir=$1 label=$2 t0 stats
  shift 2
  t0=$(now)
  if ! in_root env "${ccache_env[@]}" cmake -S /src -B "$dir" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    "${cmake_args[@]}" "$@"; then
    took "configure$label" "$t0" FAILED
    die "cmake configure failed"
  fi
  took "configure$label" "$t0"

  t0=$(now)
  in_root env "${ccache_env[@]}" ccache -z >/dev/null
  if ! in_root env "${ccache_env[@]}" cmake --build "$dir" -j "$jobs"; then
    took "build$label" "$t0" FAILED
    die "build failed"
  fi
  stats=$(in_root env "${ccache_env[@]}" ccache -s |
    sed -n 's/^ *\(Hits\|Misses\): *\([0-9]*\).*/\L\1\E \2/p' | head -n 2 | paste -sd ' ')
  took "build$label" "$t0" "ccache: ${stats:-nothing compiled}"
}

# kokkos5, kokkos4: the build, CTest and the main job.
run_host() {
  local t0 rc
  configure_build /build ""

  t0=$(now)
  set +e
  # (Not the fuzz run: its own CI part runs it in the sanitized build.)
  in_root bash -c 'cd /build && exec ctest --output-on-failure -LE fuzz -j "$1"' ctest "$jobs" 2>&1 |
    tee "$build/ctest.log"
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" = 0 ]; then took tests "$t0"; else took tests "$t0" FAILED; failed+=(tests); fi
  echo "== ctest summary ($mode)"
  if grep -q 'tests passed, ' "$build/ctest.log"; then
    sed -n '/tests passed, /,$p' "$build/ctest.log" | grep -v '^$'
  else
    tail -n 5 "$build/ctest.log"
  fi

  t0=$(now)
  set +e
  in_root env OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(nproc)}" \
    OMP_PROC_BIND="${OMP_PROC_BIND:-false}" \
    /build/drivers/kokkos-moe-replay /src/inputs/mixtral-8x7b-zipf0.3.h5 --check \
    2>&1 | tee "$build/main-job.log"
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" = 0 ]; then
    took "main job" "$t0"
  else
    took "main job" "$t0" "FAILED, exit $rc"
    failed+=("main job")
  fi
}

# rocm: Debian's source package $2 (an apt-get source argument), downloaded
# with apt in the root, its upstream tarball unpacked into $cache/src/$1 with
# the tar options that follow. Non-zero where the mirror does not serve it.
debian_source() {
  local dir=$cache/src/$1 spec=$2 tmp=/tmp/compat-source orig f
  shift 2
  [ -f "$dir/.complete" ] && return 0
  rm -rf "${rootdir:?}$tmp" && mkdir -p "$rootdir$tmp" "$cache/src"
  if ! in_root bash -c 'cd "$1" && exec apt-get -q source --download-only "$2"' \
    source "$tmp" "$spec" >"$keydir/source.log" 2>&1; then
    rm -rf "$rootdir$tmp"
    return 1
  fi
  for f in "$rootdir$tmp"/*.orig.tar.*; do
    case $f in *.asc) ;; *) orig=$f ;; esac
  done
  rm -rf "$dir.new" && mkdir -p "$dir.new"
  tar -xf "$orig" -C "$dir.new" "$@"
  touch "$dir.new/.complete"
  rm -rf "$rootdir$tmp" "$dir"
  mv "$dir.new" "$dir"
}

# rocm: Kokkos' source (KOKKOS_MOE_ROCM_KOKKOS): sets kokkos_version,
# kokkos_src (a directory under $cache/src) and kokkos_origin.
kokkos_source() {
  local debver
  if [ "$rocm_kokkos" != 3.4 ]; then
    # sid's, the one suite of the root's sources that has kokkos.
    debver=$(in_root apt-cache showsrc kokkos | sed -n 's/^Version: //p' | head -n 1)
    kokkos_version=${debver#*:}
    kokkos_version=${kokkos_version%-*}
    if [ -n "$debver" ] &&
      debian_source "kokkos-$kokkos_version" "kokkos=$debver" --strip-components=1; then
      kokkos_src=$cache/src/kokkos-$kokkos_version
      kokkos_origin="Debian's kokkos $debver source"
      return
    fi
    [ "$rocm_kokkos" = sid ] &&
      die "the mirror serves no source of Debian's kokkos ${debver:-(none)} (log: $keydir/source.log)"
    log "the mirror serves no source of Debian's kokkos ${debver:-(none)}: Kokkos 3.4.01 instead"
  fi
  # scripts/deps.sh's source (the same directory): Kokkos and Kokkos Kernels.
  debian_source trilinos-13.2.0 trilinos/bookworm --strip-components=2 \
    --wildcards '*/packages/kokkos/*' '*/packages/kokkos-kernels/*' ||
    die "the mirror serves no source of bookworm's trilinos (log: $keydir/source.log)"
  kokkos_version=3.4.01
  kokkos_src=$cache/src/trilinos-13.2.0/kokkos
  kokkos_origin="bookworm's trilinos 13.2.0 source, with cmake/patches"
}

# rocm: Kokkos 3.4 with our patches knows AMD GPUs up to AMD_GFX940, which
# clang 21 no longer compiles for: the arch options of Kokkos 4 for gfx942
# and gfx950 (CMake only, as cmake/patches/kokkos-3.4-hip-gfx90a.patch), and
# hipcc's --offload-arch, which hipcc 7 asks for instead of --amdgpu-target
# (a warning on every compile).
kokkos34_for_rocm() {  # the patched source
  local f=$1/cmake/kokkos_arch.cmake
  sed -i \
    -e '/^KOKKOS_ARCH_OPTION(AMD_GFX940 /a\
KOKKOS_ARCH_OPTION(AMD_GFX942      GPU  "AMD GPU MI300 series GFX942")\
KOKKOS_ARCH_OPTION(AMD_GFX950      GPU  "AMD GPU MI350 series GFX950")' \
    -e '/^CHECK_AMDGPU_ARCH(AMD_GFX940 /a\
CHECK_AMDGPU_ARCH(AMD_GFX942 gfx942) # Instinct MI300X, MI300A, MI325X\
CHECK_AMDGPU_ARCH(AMD_GFX950 gfx950) # Instinct MI350X, MI355X' \
    -e 's/SET(AMDGPU_ARCH_FLAG "--amdgpu-target")/SET(AMDGPU_ARCH_FLAG "--offload-arch")/' "$f"
  if ! grep -q '^KOKKOS_ARCH_OPTION(AMD_GFX950 ' "$f" || ! grep -q '^CHECK_AMDGPU_ARCH(AMD_GFX950 ' "$f" ||
    grep -q -e '--amdgpu-target' "$f"; then
    die "Kokkos 3.4's kokkos_arch.cmake is not as expected: $f"
  fi
}

# rocm: the Kokkos arch option of a gfx arch.
kokkos_arch() {
  case $1 in
    gfx90a) if [ "${kokkos_version%%.*}" -ge 4 ]; then echo AMD_GFX90A; else echo VEGA90A; fi ;;
    gfx942 | gfx950) echo "AMD_${1^^}" ;;
  esac
}

# rocm: HIP + Serial Kokkos for the gfx arch $1 from kokkos_src, built in the
# root once a key into $cache/<key>/install, mounted at /kokkos/<key> in the
# root; sets kokkos_prefix (its path in the root).
build_kokkos() {
  local gfx=$1 arch std=17 opts key dir t0 p
  arch=$(kokkos_arch "$gfx")
  [ "${kokkos_version%%.*}" -ge 5 ] && std=20  # Kokkos 5 needs C++20
  opts=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=hipcc "-DCMAKE_CXX_STANDARD=$std"
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_SHARED_LIBS=OFF
    -DKokkos_ENABLE_HIP=ON -DKokkos_ENABLE_SERIAL=ON "-DKokkos_ARCH_$arch=ON")
  # Kokkos 4+ sorts with rocThrust by default; nothing here sorts.
  [ "${kokkos_version%%.*}" -ge 4 ] && opts+=(-DKokkos_ENABLE_ROCTHRUST=OFF)
  local patches=()
  [ "$kokkos_version" = 3.4.01 ] && patches=("$src"/cmake/patches/kokkos-3.4-*.patch)
  key=kokkos-$kokkos_version-rocm-$gfx-$({ printf '%s\n' "${opts[@]}" "$hipcc_version"
    [ ${#patches[@]} -gt 0 ] && cat "${patches[@]}" && declare -f kokkos34_for_rocm; } |
    sha256sum | cut -c1-12)
  dir=$cache/$key
  kokkos_prefix=/kokkos/$key/install
  kokkos_keys+=("$key")
  mkdir -p "$dir" "$rootdir/kokkos/$key"
  mount --bind "$dir" "$rootdir/kokkos/$key"
  t0=$(now)
  if [ -f "$dir/install/.complete" ]; then
    took "kokkos $gfx" "$t0" "cached $dir"
    return
  fi
  rm -rf "$dir/src" "$dir/build" "$dir/install"
  cp -a "$kokkos_src" "$dir/src"
  for p in "${patches[@]}"; do
    in_root patch -s -p1 -d "/kokkos/$key/src" <"$p"
  done
  [ ${#patches[@]} -gt 0 ] && kokkos34_for_rocm "$dir/src"
  if ! in_root bash -euc 'cmake -S "$1/src" -B "$1/build" -DCMAKE_INSTALL_PREFIX="$1/install" "${@:3}"
      cmake --build "$1/build" -j "$2"
      cmake --install "$1/build"' kokkos "/kokkos/$key" "$jobs" "${opts[@]}" \
    >"$dir/build.log" 2>&1; then
    tail -n 30 "$dir/build.log"
    took "kokkos $gfx" "$t0" FAILED
    die "building Kokkos failed (log: $dir/build.log)"
  fi
  rm -rf "$dir/src" "$dir/build"
  touch "$dir/install/.complete"
  took "kokkos $gfx" "$t0" "built $kokkos_version, log $dir/build.log"
}

# rocm: for each arch, Kokkos, the project's build (compile and link only:
# no AMD GPU) and the project's check of the device code where it has one.
run_rocm() {
  local gfx t0 llvm_bin
  hipcc_version=$(in_root hipcc --version)
  log "$(head -n 2 <<<"$hipcc_version" | paste -sd ',' | sed 's/,/, /')"
  llvm_bin=$(sed -n 's/^InstalledDir: //p' <<<"$hipcc_version")
  # hipcc is a program in front of clang: key ccache on what it says it is.
  ccache_env+=("CCACHE_COMPILERCHECK=%compiler% --version")
  t0=$(now)
  kokkos_source
  took "kokkos source" "$t0" "$kokkos_version, $kokkos_origin"
  kokkos_keys=()
  for gfx in "${rocm_archs[@]}"; do
    build_kokkos "$gfx"
    mkdir -p "$build/$gfx"
    # The build dir keeps the Kokkos it first found over Kokkos_ROOT.
    configure_build "/build/$gfx" " $gfx" -UKokkos_DIR -DKokkos_ROOT="$kokkos_prefix"
    t0=$(now)
    if in_root python3 /src/scripts/hip_isa.py "/build/$gfx" "$gfx" --llvm-bin "$llvm_bin"; then
      took "check $gfx" "$t0"
    else
      took "check $gfx" "$t0" FAILED
      failed+=("check $gfx")
    fi
  done
  # Other keys' Kokkos installs of these archs: stale (unmounted: not ours).
  local d k
  shopt -s nullglob
  for gfx in "${rocm_archs[@]}"; do
    for d in "$cache"/kokkos-*-rocm-"$gfx"-*/; do
      d=${d%/}
      for k in "${kokkos_keys[@]}"; do [ "$d" = "$cache/$k" ] && continue 2; done
      stale+=("$d")
    done
  done
  shopt -u nullglob
}

main() {
  command -v debootstrap >/dev/null || {
    log "installing debootstrap on the host"
    apt-get "${apt_opts[@]}" install debootstrap >/dev/null ||
      { apt-get "${apt_opts[@]}" update >/dev/null &&
        apt-get "${apt_opts[@]}" install debootstrap >/dev/null; }
  }
  mkdir -p "$cache"
  cache=$(realpath "$cache")
  # One run per mode at a time: a second one would unmount the first's root.
  exec 9>"$cache/compat-$mode.lock"
  if ! flock -n 9; then
    log "waiting for another compat.sh $mode run"
    flock 9
  fi

  local key
  key=$(root_key)
  keydir=$cache/compat-$mode-$key
  rootdir=$keydir/root
  local build=$keydir/build ccache_dir=$cache/compat-$mode-ccache
  debs=$cache/compat-debs
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  # Mounts left over by a killed run (ours or an older key's); older keys'
  # roots are removed at the end (a minute on a busy disk).
  local d stale=()
  shopt -s nullglob
  for d in "$cache"/compat-"$mode"-*/; do
    d=${d%/}
    [ "$d" = "$ccache_dir" ] && continue
    unmount_all "$d" || die "$d is still mounted"
    [ "$d" = "$keydir" ] || stale+=("$d")
  done
  shopt -u nullglob

  local t0 rc=0
  t0=$(now)
  if [ -f "$keydir/.complete" ]; then
    mount_root
    took root "$t0" "cached $keydir"
  else
    mirror=$(debian_mirror)
    log "making the sid root $rootdir from $mirror"
    remove_dir "$keydir"
    mkdir -p "$keydir"
    # errexit inside make_root: not in a conditional; one root made at a
    # time (the modes share the .deb cache).
    set +e
    (
      set -e
      exec 8>"$cache/compat-debs.lock"
      flock 8
      make_root
    ) >"$keydir/root.log" 2>&1
    rc=$?
    set -e
    if [ "$rc" != 0 ]; then
      tail -n 40 "$keydir/root.log"
      die "making the root failed (log: $keydir/root.log)"
    fi
    touch "$keydir/.complete"
    took root "$t0" "made, log $keydir/root.log"
  fi
  log "$(in_root dpkg-query -W -f '${Package} ${Version}, ' \
    "${shown_packages[@]}" g++ cmake | sed 's/, $//')"
  # A newer sid would test another Kokkos than the one the recipe accepts.
  local have
  have=$(in_root dpkg-query -W -f '${Version}' "${shown_packages[0]}")
  case $have in
    "$expected_version"*) ;;
    *) die "${shown_packages[0]} is $have, not the ${expected_version%.} line the spack recipe and docs name (tests/spack/check_recipe.py TESTED_LINES)" ;;
  esac

  mkdir -p "$build" "$ccache_dir" "$rootdir/src" "$rootdir/build" "$rootdir/ccache"
  mount --bind "$src" "$rootdir/src"
  mount -o remount,bind,ro "$rootdir/src" ||
    log "warning: cannot make /src read-only; the clone is mounted writable"
  mount --bind "$build" "$rootdir/build"
  mount --bind "$ccache_dir" "$rootdir/ccache"
  # The real traces next to the clone, read by the TraceShared tests as
  # /src/../shared/traces (skipped where absent, as on the host).
  if [ -d "$src/../shared/traces" ]; then
    mkdir -p "$rootdir/shared/traces"
    mount --bind "$src/../shared/traces" "$rootdir/shared/traces"
    mount -o remount,bind,ro "$rootdir/shared/traces" || true
  fi

  ccache_env=(CCACHE_DIR=/ccache CCACHE_MAXSIZE=2G)
  failed=()
  case $mode in
    rocm) run_rocm ;;
    *) run_host ;;
  esac

  if [ ${#stale[@]} -gt 0 ]; then
    t0=$(now)
    for d in "${stale[@]}"; do remove_dir "$d"; done
    took cleanup "$t0" "removed ${stale[*]}"
  fi

  if [ ${#failed[@]} -gt 0 ]; then
    log "FAILED: ${failed[*]}"
    exit 1
  fi
  log "passed"
}

main
