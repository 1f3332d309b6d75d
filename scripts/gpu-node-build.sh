#!/usr/bin/env bash
# gpu-node-build.sh BUNDLE_DIR [--node DIR] [--jobs N] [--cuda auto|on|off] [--python PY]
#                              [--torch-dir DIR] [--no-tests] [--unpack-only]
#
# On an air-gapped GPU node: checks the bundle scripts/gpu-bundle.sh wrote (every part present,
# of its size and SHA-256), unpacks it into --node (default: BUNDLE_DIR/../pix2pix-node), finds
# LibTorch and NCCL in the pip PyTorch (or takes --torch-dir), configures pix2pix-mpi with CUDA and
# NCCL (when a CUDA toolkit is there), builds it with ninja and runs `pix2pix --version`. It leaves
# NODE/env.sh (source it before mpirun, ctest or scripts/gpu-smoke.sh) and prints what it found and
# how long each step took. docs/platforms.md: "Building on an air-gapped GPU node".
# Note [read whole before running]: bash reads a script as it runs it, so a script edited (or a
# bundle copied over it) while it runs would go on with other text; in braces, bash parses the
# whole block before running any of it.
{
set -euo pipefail

usage() { sed -n '2,3p' "$0" | sed 's/^# //'; exit 2; }
bundle="" node="" jobs="$(nproc)" cuda=auto python="${PYTHON:-python3}" torch_dir="" tests=ON unpack_only=false
while [ $# -gt 0 ]; do
  case "$1" in
    --node) node="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --cuda) cuda="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    --torch-dir) torch_dir="$2"; shift 2 ;;
    --no-tests) tests=OFF; shift ;;
    --unpack-only) unpack_only=true; shift ;;
    -h|--help) usage ;;
    -*) echo "gpu-node-build: unknown option '$1'" >&2; usage ;;
    *) [ -z "$bundle" ] || usage; bundle="$1"; shift ;;
  esac
done
[ -n "$bundle" ] || usage
case "$cuda" in auto|on|off) ;; *) echo "gpu-node-build: --cuda is auto, on or off, not '$cuda'" >&2; exit 2 ;; esac
log() { printf 'gpu-node-build: %s\n' "$*"; }
die() { printf 'gpu-node-build: error: %s\n' "$*" >&2; exit 1; }
now() { date +%s; }
t0=$(now)
declare -a timings=()
step_done() { timings+=("$(printf '%s %d s' "$1" $(( $(now) - $2 )))"); }
# CPU seconds (user + system) of this shell's finished children so far: the build's work, whatever
# the cores. `times` runs in this shell (in a $(...) subshell it would count the subshell's children).
children_cpu() {
  times >"$node/.times"
  tail -n 1 "$node/.times" | awk '{ for (i = 1; i <= 2; i++) { split($i, t, /m|s/); s += t[1] * 60 + t[2] } printf "%d", s }'
}

[ -d "$bundle" ] || die "no bundle folder '$bundle'"
bundle="$(cd "$bundle" && pwd)"
manifest="$bundle/MANIFEST.tsv"
[ -f "$manifest" ] || die "$manifest is missing: copy every file scripts/gpu-bundle.sh wrote, MANIFEST.tsv included"
node="${node:-$(dirname "$bundle")/pix2pix-node}"
# The node folder is this script's own: it replaces what it unpacked there before, so a folder
# that holds anything else is refused rather than overwritten.
if [ -d "$node" ] && [ -n "$(ls -A "$node")" ] && [ ! -f "$node/.pix2pix-node" ]; then
  die "--node $node is not empty and is not a folder this script made: name a new or empty folder"
fi
mkdir -p "$node" && touch "$node/.pix2pix-node"
node="$(cd "$node" && pwd)"
deps="$node/deps" build="$node/build"
built_prefix="$(sed -n 's/.*built-in prefix \([^;]*\);.*/\1/p' "$manifest" | head -n 1)"
[ -n "$built_prefix" ] || die "$manifest has no 'built-in prefix' line: not a manifest of scripts/gpu-bundle.sh"

# ---- 1. every part there, whole ----------------------------------------------------------------
t=$(now)
bad=0
while IFS=$'\t' read -r order part file bytes sum into holds; do
  case "$order" in ''|'#'*|order) continue ;; esac
  f="$bundle/$file"
  if [ ! -f "$f" ]; then
    echo "  part $order '$part' ($holds): $file is missing" >&2; bad=1
  elif [ "$(stat -c %s "$f")" != "$bytes" ]; then
    echo "  part $order '$part' ($holds): $file has $(stat -c %s "$f") bytes, the manifest says $bytes (cut short in transfer?)" >&2; bad=1
  elif [ "$(sha256sum "$f" | cut -d' ' -f1)" != "$sum" ]; then
    echo "  part $order '$part' ($holds): $file is corrupt (SHA-256 differs from the manifest's)" >&2; bad=1
  fi
done <"$manifest"
[ "$bad" = 0 ] || die "the bundle in $bundle is not whole (above); copy those files again"
log "bundle: $(grep -c $'^[0-9]' "$manifest") files verified ($(sed -n '2s/^# //p' "$manifest"))"
step_done verify "$t"

# ---- 2. unpack what is new and relocate ----------------------------------------------------------
# xz where the node has it, else Python's lzma (a minimal node image may lack xz-utils).
unxz_stream() {
  if command -v xz >/dev/null; then xz -dc
  else "$python" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.stdin.buffer), sys.stdout.buffer, 1 << 20)'
  fi
}
# unpack_part NAME DEST: a part split in pieces is the concatenation of its pieces, in order.
unpack_part() {
  mkdir -p "$2"
  awk -F'\t' -v p="$1" '$2 == p {print $3}' "$manifest" | sed "s#^#$bundle/#" | xargs cat \
    | unxz_stream | tar -xf - -C "$2" || die "part '$1' did not unpack"
}
# sync_tree FROM TO: TO becomes a copy of FROM, but a file whose bytes did not change keeps its
# time, so that after a new bundle ninja recompiles only what changed (a node is held minutes).
sync_tree() {
  local from="$1" to="$2" f
  mkdir -p "$to"
  while IFS= read -r -d '' f; do
    if [ ! -e "$to/$f" ] || ! cmp -s "$from/$f" "$to/$f"; then
      mkdir -p "$(dirname "$to/$f")" && rm -f "$to/$f" && cp -P "$from/$f" "$to/$f"
    fi
  done < <(cd "$from" && find . \( -type f -o -type l \) -print0)
  while IFS= read -r -d '' f; do
    [ -e "$from/$f" ] || [ -L "$from/$f" ] || rm -f "$to/$f"
  done < <(cd "$to" && find . \( -type f -o -type l \) -print0)
}
t=$(now)
parts="$(awk -F'\t' '$1 ~ /^[0-9]+$/ {print $1 "\t" $2 "\t" $6}' "$manifest" | sort -t$'\t' -k1,1n -u)"
# The prefix's parts as one: any change unpacks all of them anew (seconds); the source is synced.
deps_key="$(awk -F'\t' '$1 ~ /^[0-9]+$/ && $6 ~ /^deps/ {print $5}' "$manifest" | sha256sum | cut -c1-16)"
if [ "$(cat "$node/.deps-unpacked" 2>/dev/null)" = "$deps_key" ]; then
  log "dependencies unpacked before into $deps (the same parts)"
else
  rm -rf "$deps" "$node/.deps-unpacked"
  while IFS=$'\t' read -r order name into; do
    case "$into" in top) ;; deps) unpack_part "$name" "$deps" ;; deps/*) unpack_part "$name" "$deps/${into#deps/}" ;;
      *) die "part $order '$name': unknown destination '$into' in the manifest" ;; esac
  done <<<"$parts"
  # Relocate: the text files that spell the built-in prefix (h5pcc, pkg-config files, Open MPI's
  # wrapper data) now spell this one; binaries find their libraries through $ORIGIN RUNPATHs and
  # Open MPI its files through OPAL_PREFIX (env.sh).
  { grep -rlI --null "$built_prefix" "$deps" || true; } | xargs -0 -r sed -i "s#$built_prefix#$deps#g"
  echo "$deps_key" >"$node/.deps-unpacked"
  log "dependencies unpacked into $deps"
fi
while IFS=$'\t' read -r order name into; do
  [ "$into" = top ] || continue
  key="$(awk -F'\t' -v p="$name" '$2 == p {print $5}' "$manifest" | sha256sum | cut -c1-16)"
  [ "$(cat "$node/.top-$name" 2>/dev/null)" = "$key" ] && continue
  rm -rf "$node/.incoming" && unpack_part "$name" "$node/.incoming"
  for entry in "$node/.incoming"/*; do sync_tree "$entry" "$node/$(basename "$entry")"; done
  rm -rf "$node/.incoming"
  echo "$key" >"$node/.top-$name"
  log "part $order '$name' unpacked into $node (files that did not change keep their time)"
done <<<"$parts"
fashion="$deps/share/datasets/fashion-mnist"
cat >"$node/env.sh" <<EOF
# Written by gpu-node-build.sh: the bundle's Open MPI, HDF5 and Fashion-MNIST for this shell.
export OPAL_PREFIX="$deps"
export PATH="$deps/bin:$build/bin:\$PATH"
export LD_LIBRARY_PATH="$deps/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export FASHION_MNIST_DIR="$fashion"
# Open MPI 4.1 starts even a one-node job's (and a singleton's) daemon through its rsh launcher,
# which stops when neither ssh nor rsh is on PATH, as on a bare node; on one node \`false\` is enough.
if ! command -v ssh >/dev/null && ! command -v rsh >/dev/null; then export OMPI_MCA_plm_rsh_agent=false; fi
EOF
# shellcheck disable=SC1091
. "$node/env.sh"
src="$node/pix2pix-mpi"
[ -f "$src/CMakeLists.txt" ] || die "$src has no CMakeLists.txt: the 'source' part is missing from the manifest"
step_done unpack "$t"
if $unpack_only; then log "unpacked (--unpack-only): $node; . $node/env.sh"; exit 0; fi

# ---- 3. what the node has: compiler, CMake, ninja, LibTorch, CUDA, NCCL --------------------------
t=$(now)
for tool in cmake ninja c++; do command -v "$tool" >/dev/null || die "no '$tool' on PATH (the node needs a C++ compiler, CMake >= 3.18 and ninja)"; done
log "compiler: $(c++ --version | head -n 1); $(cmake --version | head -n 1); ninja $(ninja --version)"
torch_prefix="" nccl_home="" test_python=""
if [ -n "$torch_dir" ]; then
  torch_prefix="$torch_dir"
  log "LibTorch: --torch-dir $torch_dir"
elif "$python" -c 'import torch' 2>/dev/null; then
  read -r torch_version torch_cuda torch_abi torch_prefix < <("$python" -c \
    'import torch; print(torch.__version__, torch.version.cuda, int(torch._C._GLIBCXX_USE_CXX11_ABI), torch.utils.cmake_prefix_path)')
  log "LibTorch: PyTorch $torch_version (CUDA $torch_cuda, C++11 ABI $torch_abi) from $("$python" -c 'import torch, os; print(os.path.dirname(torch.__file__))')"
  [ "$torch_abi" = 1 ] || die "this PyTorch is built with the pre-C++11 ABI; the bundle's libraries use the C++11 ABI (docs/platforms.md)"
  # The tests' PyTorch reference scripts run in this Python, the one with torch.
  test_python="$("$python" -c 'import sys; print(sys.executable)')"
  # The pip NCCL: nvidia/nccl in the cu12 wheels; any nvidia/**/include/nccl.h otherwise (a CUDA 13
  # wheel may lay its files out otherwise).
  nccl_home="$("$python" -c '
import glob, os, sys
import nvidia
for root in nvidia.__path__:
    for header in sorted(glob.glob(os.path.join(root, "**", "include", "nccl.h"), recursive=True)):
        home = os.path.dirname(os.path.dirname(header))
        if glob.glob(os.path.join(home, "lib*", "libnccl.so*")):
            print(home); sys.exit(0)' 2>/dev/null || true)"
else
  log "LibTorch: no PyTorch in '$python'; CMake's own search (--torch-dir DIR names one)"
fi
cuda_home="${CUDA_HOME:-}"
if [ -z "$cuda_home" ]; then
  if command -v nvcc >/dev/null; then cuda_home="$(dirname "$(dirname "$(command -v nvcc)")")"
  elif [ -x /usr/local/cuda/bin/nvcc ] || [ -f /usr/local/cuda/include/cuda_runtime.h ]; then cuda_home=/usr/local/cuda; fi
fi
case "$cuda" in
  auto) if [ -n "$cuda_home" ]; then cuda_flag=ON; else cuda_flag=OFF; fi ;;
  on) [ -n "$cuda_home" ] || die "--cuda on, but no CUDA toolkit (CUDA_HOME, nvcc on PATH or /usr/local/cuda)"; cuda_flag=ON ;;
  off) cuda_flag=OFF ;;
esac
if [ "$cuda_flag" = ON ]; then
  log "CUDA: $cuda_home ($("$cuda_home/bin/nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' || echo 'no nvcc'))"
  log "NCCL: ${nccl_home:-none from pip; FindNCCL looks in the CUDA toolkit}"
else
  log "CUDA: off (the CPU build)"
fi
step_done find "$t"

# ---- 4. configure and build ---------------------------------------------------------------------
t=$(now)
cmake_args=(-S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
  "-DCMAKE_PREFIX_PATH=$deps${torch_prefix:+;$torch_prefix}"
  -DMPI_C_COMPILER="$deps/bin/mpicc" -DMPIEXEC_EXECUTABLE="$deps/bin/mpirun"
  -DHDF5_C_COMPILER_EXECUTABLE="$deps/bin/h5pcc"
  -DOpenCV_DIR="$deps/lib/cmake/opencv4"
  -DBoost_DIR="$deps/lib/x86_64-linux-gnu/cmake/Boost-1.74.0"
  -DGTest_DIR="$deps/lib/cmake/GTest"
  -DZLIB_ROOT="$deps" -DZLIB_USE_STATIC_LIBS=ON
  -DPIX2PIX_WITH_ONNX=OFF -DPIX2PIX_BUILD_TESTS="$tests" -DPIX2PIX_WARNINGS_AS_ERRORS=OFF
  -DPIX2PIX_FASHION_MNIST_DIR="$fashion"
  -DPIX2PIX_WITH_CUDA="$cuda_flag")
[ "$cuda_flag" = ON ] && cmake_args+=(-DCUDAToolkit_ROOT="$cuda_home")
[ -n "$nccl_home" ] && cmake_args+=(-DNCCL_HOME="$nccl_home")
[ -n "$test_python" ] && cmake_args+=(-DPIX2PIX_TEST_PYTHON="$test_python")
cmake "${cmake_args[@]}" >"$node/configure.log" 2>&1 || { tail -n 40 "$node/configure.log"; die "configure failed ($node/configure.log)"; }
grep -E '^-- pix2pix-mpi' "$node/configure.log" | sed 's/^-- /gpu-node-build: configured: /'
step_done configure "$t"
t=$(now)
children_cpu >"$node/.cpu0"
# -k 0: one failed build names every source that fails, not the first (a node is held minutes).
ninja -C "$build" -j "$jobs" -k 0 >"$node/build.log" 2>&1 || {
  grep -A8 ': error' "$node/build.log" | head -n 120
  die "build failed: $(grep -c ': error' "$node/build.log") errors ($node/build.log)"
}
step_done build "$t"
# Warnings stay warnings on the node (PIX2PIX_WARNINGS_AS_ERRORS=OFF: its LibTorch may be newer than
# CI's); the ones in our own sources are listed, for CI's -Werror build to fix.
ours="$(grep -E "^$src/(src|include|tests)/[^:]*:[0-9]+:[0-9]+: warning:" "$node/build.log" | sort -u || true)"
if [ -n "$ours" ]; then
  log "$(wc -l <<<"$ours") warnings in our sources (CI builds with -Werror; fix them there):"
  sed 's/^/  /' <<<"$ours" | head -n 40
else
  log "no warnings in our sources"
fi
children_cpu >"$node/.cpu1"
timings+=("(the build's CPU time $(( $(cat "$node/.cpu1") - $(cat "$node/.cpu0") )) s)")

# ---- 5. it runs ---------------------------------------------------------------------------------
# PIX2PIX_RUNTIME_MENDED=1: the program as linked, without its own restart; env.sh below decides
# from it for the test programs too, which do not restart themselves.
# See Note [a program that mends its own runtime] (src/common/cxx_runtime.cpp).
PIX2PIX_RUNTIME_MENDED=1 "$build/bin/pix2pix" --version | tee "$node/version.txt"
# The C++ runtime (See Note [one C++ runtime] in src/CMakeLists.txt): a LibTorch that exports parts
# of libstdc++ can split the process's runtime in two; tests that write and read files, throw and
# catch are the ones that died of it on the first GPU node. Seconds; the suite itself is ctest's.
runtime_ok=true
first_needed="$(readelf -d "$build/bin/pix2pix" 2>/dev/null | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | head -n 1)"
torch_cpu="$(ldd "$build/bin/pix2pix" 2>/dev/null | awk '/libtorch_cpu/ {print $3; exit}')"
own=0
if [ -n "$torch_cpu" ] && command -v nm >/dev/null; then
  # libstdc++'s own (not template) parts: filesystem, locale, ios_base, file streams, codecvt. A
  # library built against the shared libstdc++ exports none (Debian's LibTorch 1.13 and 2.6: 0).
  own="$(nm -D --defined-only "$torch_cpu" 2>/dev/null |
    grep -cE ' [TWV] _ZN?K?St(10filesystem|7__cxx1110filesystem|6locale|8ios_base|13basic_filebuf|14basic_ofstream|7codecvt|12__basic_file)' || true)"
  log "C++ runtime: $torch_cpu exports $own symbols of libstdc++'s own; pix2pix names $first_needed first"
fi
# Which runtime, LibTorch, NCCL and CUDA runtime the loader picks, in load order, the linker and the
# link line: the record to read when a run on the node crashes.
ldd "$build/bin/pix2pix" 2>/dev/null | grep -E 'libstdc\+\+|libgcc_s|libtorch_c|libnccl|libcudart' |
  sed 's/^[[:space:]]*/gpu-node-build: loads /'
# The link's own compiler (CMake's choice, /opt/gcc/bin/g++ on the H200 node), not the c++ on PATH
# (Ubuntu's there): its linker and search folders are the ones the link used.
link_line="$(ninja -C "$build" -t commands bin/pix2pix 2>/dev/null | tail -n 1)"
compiler="$(printf '%s' "${link_line#: && }" | cut -d' ' -f1)"
command -v "$compiler" >/dev/null 2>&1 || compiler=c++
log "linker: $("$("$compiler" -print-prog-name=ld)" --version 2>&1 | head -n 1) (through $compiler)"
{
  echo "# the link line of bin/pix2pix, then its NEEDED and RUNPATH entries, in order"
  echo "$link_line"
  readelf -d "$build/bin/pix2pix" 2>/dev/null | grep -E 'NEEDED|RUNPATH|RPATH'
  # Issue 46, item 3: which file each -lstdc++ became, in the order the linker opened its inputs
  # (the link again, with --trace, into a scratch file), and where it looks for libraries.
  echo "# the C++ runtime's files as the link's compiler ($compiler) finds them, and the linker's search folders"
  "$compiler" -print-file-name=libstdc++.so
  "$compiler" -print-file-name=libstdc++.a
  "$("$compiler" -print-prog-name=ld)" --verbose 2>/dev/null | grep -o 'SEARCH_DIR("[^"]*")' | tr '\n' ' '
  echo
  echo "# the link with --trace: the C++ runtime, LibTorch and the other shared inputs, in the order opened"
  trace_line="$(printf '%s' "$link_line" | sed -e 's| -Wl,--dependency-file=[^ ]*||' \
    -e 's| -o bin/pix2pix | -Wl,--trace -o pix2pix-trace |')"
  case "$trace_line" in
    *" -o pix2pix-trace "*)
      (cd "$build" && eval "$trace_line") 2>&1 | grep -nE 'libstdc|libgcc|libtorch|libc10|\.so' | head -n 40 || true
      rm -f "$build/pix2pix-trace" ;;
    *) echo "(not traced: the link line names no '-o bin/pix2pix')" ;;
  esac
} >"$node/link-pix2pix.txt"
# Note [preloading the C++ runtime]: the first GPU node's linker (Ubuntu 24.04's GCC 13.3, CMake 4.4)
# left libtorch.so the first NEEDED in spite of the link option, and every run that wrote a file and
# threw died there; with the system's libstdc++ preloaded the same build passed its smoke, 30 of 30.
# The cause (the node's link --trace, 2026-11-30): that compiler found a static libstdc++.a first
# and linked a copy into the program; the link now names the shared file
# (See Note [one C++ runtime] in src/CMakeLists.txt); the preload stays where even that fails.
# So where the program says its runtime is split (its --version "C++" line), env.sh preloads
# libstdc++: every process started from that shell (mpirun's ranks too) then shares one runtime.
# See Note [two C++ runtimes in one process] (src/common/cxx_runtime.cpp).
if grep -q '^  C++       split: ' "$node/version.txt"; then
  libstdcxx="$(ldd "$build/bin/pix2pix" 2>/dev/null | awk '$1 == "libstdc++.so.6" {print $3; exit}')"
  if [ -n "$libstdcxx" ]; then
    cat >>"$node/env.sh" <<EOF
# See Note [preloading the C++ runtime] (scripts/gpu-node-build.sh): pix2pix --version said its C++
# runtime is split ($(sed -n 's/^  C++       split: //p' "$node/version.txt")).
export LD_PRELOAD="$libstdcxx\${LD_PRELOAD:+:\$LD_PRELOAD}"
EOF
    # shellcheck disable=SC1091
    . "$node/env.sh"
    log "C++ runtime: split (link line: $node/link-pix2pix.txt); env.sh preloads $libstdcxx"
    log "  (See Note [preloading the C++ runtime]): source it before every run; now: $("$build/bin/pix2pix" --version 2>/dev/null | sed -n 's/^  C++       //p')"
  fi
fi
if [ "$tests" = ON ]; then
  t=$(now)
  if "$build/bin/pix2pix_tests" --gtest_filter='InputFile.*:IdxReader.*:PairedDataset.*:CheckpointFiles.*' \
    >"$node/runtime-check.log" 2>&1; then
    log "C++ runtime: files, exceptions and HDF5 in one process work ($(grep -c '^\[       OK' "$node/runtime-check.log") tests)"
  else
    runtime_ok=false
    tail -n 15 "$node/runtime-check.log" >&2
    log "error: the C++ runtime check failed ($node/runtime-check.log): this LibTorch and the program do not share one"
    log "  C++ runtime (See Note [one C++ runtime] in src/CMakeLists.txt); the build is there, but do not trust its runs"
  fi
  step_done "runtime check" "$t"
fi
log "wall times with $jobs jobs: $(IFS=,; echo "${timings[*]}"); total $(( $(now) - t0 )) s"
log "next: . $node/env.sh; (cd $build && ctest -j $jobs -E cluster); cd $src && bash scripts/gpu-smoke.sh $build"
$runtime_ok || exit 1
exit 0
}
