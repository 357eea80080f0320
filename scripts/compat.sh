#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds KokkosMoE and runs its host tests (CTest) and the main job (the
# replay driver on inputs/ with --check, as scripts/run.sh does) against a
# newer Kokkos than the 3.4.01 of scripts/deps.sh, from Debian sid binary
# packages inside a debootstrapped sid root (../shared/notes/kokkos-versions.md):
#
#   scripts/compat.sh kokkos5   Kokkos 5.2.2 (libkokkos-dev), OpenMP, no Kokkos Kernels
#   scripts/compat.sh kokkos4   Kokkos + Kokkos Kernels 4.5.1 (Trilinos 16.1), Serial
#
# Everything lives under the cache root, nothing in the clone (bind-mounted
# read-only at /src inside the root, ../shared/traces at /shared/traces):
#   $CACHE/compat-<mode>-<hash>/root     the sid root; <hash> covers the package
#                                        list and this script's root-making part
#   $CACHE/compat-<mode>-<hash>/build    the build tree (ctest.log, main-job.log)
#   $CACHE/compat-<mode>-ccache          ccache's cache, kept across roots
#   $CACHE/compat-debs                   the downloaded .debs, for both modes
# A root with its .complete marker is reused (seconds); otherwise it is made
# with debootstrap and apt (1-3 minutes, under one with the .deb cache). Roots
# of another <hash> are removed at the end of the run. proc, /dev, /dev/pts,
# /src, /build, /ccache (and /shared/traces) are mounted for the run and
# always unmounted at exit; mounts a killed run left behind are unmounted first.
# Delete $CACHE/compat-<mode>-* to take a newer sid.
#
# Prints the time of each part (root, configure, build, tests, main job) and
# CTest's summary. Exit code non-zero when the root, the build, a test or the
# main job fails. Needs root (debootstrap, chroot, mount) and installs
# debootstrap on the host with apt when missing.
#
# Environment:
#   KOKKOS_MOE_CACHE   cache root (default ~/.cache/kokkos-moe)
#   KOKKOS_MOE_MIRROR  Debian mirror for sid (default: the one the system's
#                      apt sources name for its own release)
#   JOBS               parallel compile and test jobs (default: nproc)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
cache=${KOKKOS_MOE_CACHE:-$HOME/.cache/kokkos-moe}
jobs=${JOBS:-$(nproc)}
mode=${1:-}
apt_opts=(-o Acquire::Check-Valid-Until=false -o Acquire::Check-Date=false
  -o DPkg::Lock::Timeout=600 -q -y)

usage() { echo "usage: $0 kokkos5|kokkos4" >&2; exit 2; }
log() { echo "[compat $mode] $*"; }
die() { echo "[compat $mode] error: $*" >&2; exit 1; }

if [ "$(id -u)" != 0 ]; then
  exec sudo KOKKOS_MOE_CACHE="$cache" JOBS="$jobs" \
    ${KOKKOS_MOE_MIRROR:+KOKKOS_MOE_MIRROR="$KOKKOS_MOE_MIRROR"} "$0" "$@"
fi

# What the project needs in every root (scripts/deps.sh's list, ccache for
# the compiles, python3 for CTest's SpackRecipe test), then each mode's Kokkos.
common_packages=(g++ gfortran cmake make ccache libhdf5-dev libgtest-dev
  libbenchmark-dev python3 ca-certificates)
case $mode in
  kokkos5)
    packages=("${common_packages[@]}" libkokkos-dev)
    kokkos_packages=(libkokkos-dev)
    expected_version=5.2.  # the release line the spack recipe and docs name
    # Debian packages no Kokkos Kernels 5.
    cmake_args=(-DKokkosMoE_ENABLE_KOKKOSKERNELS=OFF)
    ;;
  kokkos4)
    # Trilinos' Kokkos Kernels links BLAS and LAPACK but does not depend on them.
    packages=("${common_packages[@]}" libtrilinos-kokkos-dev
      libtrilinos-kokkos-kernels-dev liblapack-dev libblas-dev)
    kokkos_packages=(libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev)
    expected_version=16.1.  # Trilinos 16.1: Kokkos and Kokkos Kernels 4.5
    # The compiler's baseline instruction set (x86-64: SSE2): the host
    # fragments' narrowest vectors, tested here; the other builds are native.
    cmake_args=(-DKokkosMoE_ENABLE_KOKKOSKERNELS=ON -DKokkosMoE_HOST_ARCH=baseline)
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
  { printf '%s\n' "$mode" "${packages[@]}"; declare -f make_root fix_root mount_root; } |
    sha256sum | cut -c1-12
}

now() { date +%s; }
timings=()
took() {  # part, start time[, note]
  local s=$(($(now) - $2))
  timings+=("$(printf '%-10s %4d s%s' "$1" "$s" "${3:+  ($3)}")")
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
    # time (the two modes share the .deb cache).
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
    "${kokkos_packages[@]}" g++ cmake | sed 's/, $//')"
  # A newer sid would test another Kokkos than the one the recipe accepts.
  local have
  have=$(in_root dpkg-query -W -f '${Version}' "${kokkos_packages[0]}")
  case $have in
    "$expected_version"*) ;;
    *) die "${kokkos_packages[0]} is $have, not the ${expected_version%.} line the spack recipe and docs name (tests/spack/check_recipe.py TESTED_LINES)" ;;
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

  local env=(CCACHE_DIR=/ccache CCACHE_MAXSIZE=2G)
  t0=$(now)
  if ! in_root env "${env[@]}" cmake -S /src -B /build -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    "${cmake_args[@]}"; then
    took configure "$t0" FAILED
    die "cmake configure failed"
  fi
  took configure "$t0"

  t0=$(now)
  in_root env "${env[@]}" ccache -z >/dev/null
  if ! in_root env "${env[@]}" cmake --build /build -j "$jobs"; then
    took build "$t0" FAILED
    die "build failed"
  fi
  local stats
  stats=$(in_root env "${env[@]}" ccache -s |
    sed -n 's/^ *\(Hits\|Misses\): *\([0-9]*\).*/\L\1\E \2/p' | head -n 2 | paste -sd ' ')
  took build "$t0" "ccache: ${stats:-nothing compiled}"

  local failed=()
  t0=$(now)
  set +e
  in_root bash -c 'cd /build && exec ctest --output-on-failure -j "$1"' ctest "$jobs" 2>&1 |
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
