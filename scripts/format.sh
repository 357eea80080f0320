#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Formats the C and C++ sources with clang-format 14 (Debian 12's) and the
# repository's .clang-format.
#
#   scripts/format.sh            rewrites the files in place
#   scripts/format.sh --check    changes nothing; lists the files clang-format
#                                would change, and the sources without an SPDX
#                                license line, and exits 1 if there are any
#   scripts/format.sh [--check] FILE...   only these files
#
# The files: the repository's *.hpp, *.cpp, *.h and *.c, tracked or not
# (git ignores the build directories), except the CMake templates (*.in),
# whose @VARIABLES@ are not C++. Installs clang-format with apt (through sudo
# when not root) when it is missing. Another major version formats some
# constructs differently, so this script insists on 14; CLANG_FORMAT names
# the binary to use.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
check=0
if [ "${1:-}" = --check ]; then
  check=1
  shift
fi
case ${1:-} in
  -h | --help) sed -n '2,/^[^#]/{/SPDX-License-Identifier/d;/^#/{s/^# \{0,1\}//;p}}' "$0"; exit 0 ;;
  -*) echo "usage: $0 [--check] [FILE...]" >&2; exit 2 ;;
esac
want=14

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
major() { "$1" --version 2>/dev/null | sed -n 's/.*clang-format version \([0-9]*\).*/\1/p'; }

find_clang_format() {
  local c
  for c in "${CLANG_FORMAT:-clang-format-$want}" clang-format; do
    if command -v "$c" >/dev/null && [ "$(major "$c")" = $want ]; then
      command -v "$c"
      return
    fi
    [ -n "${CLANG_FORMAT:-}" ] && break  # the one asked for, or none
  done
  return 1
}

if ! cf=$(find_clang_format) && [ -z "${CLANG_FORMAT:-}" ]; then
  echo "[format] installing clang-format-$want" >&2
  as_root apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q clang-format-$want >&2
  cf=$(find_clang_format) || true
fi
if [ -z "${cf:-}" ]; then
  echo "[format] error: clang-format $want not found" \
    "(${CLANG_FORMAT:+CLANG_FORMAT=$CLANG_FORMAT is not it; }looked for clang-format-$want and clang-format)" >&2
  exit 2
fi

if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files --cached --others --exclude-standard \
    '*.hpp' '*.cpp' '*.h' '*.c' | sort -u)
fi

if [ $check = 0 ]; then
  "$cf" -i --style=file "${files[@]}"
  exit 0
fi
# Every source file names its license in its first lines (LICENSE).
spdx_missing=()
if [ $# -eq 0 ]; then
  while IFS= read -r f; do
    [ -f "$f" ] || continue
    head -n 3 "$f" | grep -q 'SPDX-License-Identifier: BSD-3-Clause' || spdx_missing+=("$f")
  done < <(git ls-files --cached --others --exclude-standard '*.hpp' '*.cpp' '*.h' '*.c' \
    '*.in' '*.f90' '*.cmake' '*CMakeLists.txt' '*.sh' '*.py' '*.yaml' .ci/run | sort -u)
fi
if [ ${#spdx_missing[@]} -gt 0 ]; then
  echo "[format] ${#spdx_missing[@]} files lack the line 'SPDX-License-Identifier: BSD-3-Clause' in their first 3 lines:"
  printf '  %s\n' "${spdx_missing[@]}"
fi
differ=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue  # deleted in the working tree, not yet in the index
  "$cf" --style=file "$f" | cmp -s - "$f" || differ+=("$f")
done
if [ ${#differ[@]} -gt 0 ]; then
  echo "[format] ${#differ[@]} of ${#files[@]} files differ from $("$cf" --version | sed 's/^.*clang-format/clang-format/') with .clang-format" \
    "(scripts/format.sh rewrites them; '$cf --style=file FILE | diff FILE -' shows how):"
  printf '  %s\n' "${differ[@]}"
  exit 1
fi
[ ${#spdx_missing[@]} -eq 0 ] || exit 1
echo "[format] ${#files[@]} files formatted, every source names its license"
