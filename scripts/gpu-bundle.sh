#!/usr/bin/env bash
# scripts/gpu-bundle.sh OUT [--work DIR] [--jobs N] [--allow-dirty]
#
# Writes into OUT what a bare, air-gapped GPU node needs to build and test pix2pix-mpi besides its
# CUDA toolkit, CMake, ninja and a pip PyTorch with the pip NCCL: an Open MPI, a parallel HDF5, a
# minimal static OpenCV, Boost.Program_options, GoogleTest, Fashion-MNIST and the project's source
# at HEAD, as parts of at most 60 MiB, each listed in OUT/MANIFEST.tsv with its size, SHA-256 and
# what it holds, in the order to unpack. scripts/gpu-node-build.sh (also copied to OUT) builds from
# them on the node, and scripts/gpu-node-run.sh (copied too) builds, smokes and tests in one budget;
# docs/platforms.md "Building on an air-gapped GPU node" says how and how long.
#
# Runs on a networked Debian 12 build machine, as root (it installs its build tools with apt-get).
# Sources come from Debian's own source packages (a deb-src entry in a separate apt state folder,
# the host's apt configuration untouched); builds are kept under --work and reused when the same
# source and recipe ask again. See Note [what the bundle builds, and for which node].
{  # See Note [read whole before running] (scripts/gpu-node-build.sh).
set -euo pipefail

# Note [what the bundle builds, and for which node]
# The node has a C++ compiler we do not know (nvcc's host g++: GCC 11 on an Ubuntu 22.04-class
# node, newer elsewhere) on glibc >= 2.35. So:
#  - C libraries (Open MPI, HDF5, zlib, libpng, libjpeg) and the C++ static libraries (OpenCV,
#    Boost.Program_options, GoogleTest) are built here with Debian 12's GCC 12, and every ELF file
#    and archive is checked to need no glibc symbol newer than GLIBC_2.35 and no libstdc++ symbol
#    newer than GCC 12's (GLIBCXX_3.4.30, CXXABI_1.3.13; Ubuntu 22.04's libstdc++6 is GCC 12's),
#    and no shared library outside glibc and the bundle (no fabric, no libxml2, no libudev):
#    check_elf_closure below fails the bundle otherwise.
#  - Open MPI is built without verbs/UCX/OFI/PSM2 and without CUDA awareness: on one node ranks
#    talk over shared memory, across nodes over TCP, and the GPU path moves gradients with NCCL, so
#    MPI carries only NCCL's unique id, small control messages and the CPU fallback.
#  - Everything is built for the prefix /opt/pix2pix-deps and made relocatable: RUNPATHs are
#    $ORIGIN-relative, Open MPI honours OPAL_PREFIX, and gpu-node-build.sh rewrites the prefix
#    in the few text files that spell it (h5pcc, pkg-config files, Open MPI's wrapper data).
#  - ONNX (and the protobuf under it) is not bundled: the node builds with PIX2PIX_WITH_ONNX=OFF,
#    where `export --format onnx` says so and `--format pytorch` remains (docs/platforms.md).

usage() { sed -n '2,3p' "$0" | sed 's/^# //'; exit 2; }
out="" work=/var/cache/pix2pix/gpu-bundle jobs="$(nproc)" allow_dirty=0
while [ $# -gt 0 ]; do
  case "$1" in
    --work) work="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --allow-dirty) allow_dirty=1; shift ;;
    -h|--help) usage ;;
    -*) echo "gpu-bundle: unknown option '$1'" >&2; usage ;;
    *) [ -z "$out" ] || usage; out="$1"; shift ;;
  esac
done
[ -n "$out" ] || usage
repo="$(cd "$(dirname "$0")/.." && pwd)"
prefix=/opt/pix2pix-deps            # the built-in prefix: See Note [what the bundle builds, and for which node]
part_limit=$((60 * 1024 * 1024))
stage="$work/stage"                  # DESTDIR: the prefix as it will be packed, per component
log() { printf 'gpu-bundle: %s\n' "$*"; }
die() { printf 'gpu-bundle: error: %s\n' "$*" >&2; exit 1; }
elapsed() { echo $(( $(date +%s) - $1 )); }
# An OUT that exists is replaced only when it is an earlier bundle (it holds a MANIFEST.tsv).
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ] && [ ! -f "$out/MANIFEST.tsv" ]; then
  die "$out exists and is not a bundle (no MANIFEST.tsv): name a new or empty folder"
fi

# ---- tools of the build machine -----------------------------------------------------------------
build_tools=(g++ gcc make cmake ninja-build pkg-config curl xz-utils bzip2 patchelf nasm
             binutils file perl python3 libboost-program-options-dev googletest dataset-fashion-mnist)
missing=()
for p in "${build_tools[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || die "missing build packages (${missing[*]}); run as root or install them"
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } ||
    die "cannot install ${missing[*]}"
fi

mkdir -p "$work"/{src,build,apt/lists/partial,apt/archives/partial} "$stage"
t_all=$(date +%s)

# ---- sources: Debian 12's source packages, verified against their .dsc hashes -------------------
apt_opts=(-o Dir::Etc::SourceList="$work/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o Dir::State::Lists="$work/apt/lists" -o Dir::Cache="$work/apt" -o APT::Sandbox::User=root)
echo 'deb-src http://deb.debian.org/debian bookworm main' >"$work/apt/sources.list"
if [ -z "$(ls "$work/apt/lists" | grep -i sources || true)" ]; then
  apt-get "${apt_opts[@]}" update -qq || die "apt-get update of the deb-src index failed (network?)"
fi
# fetch_orig PACKAGE -> prints the path of its verified upstream tarball
fetch_orig() {
  local line uri file size sum
  line="$(apt-get "${apt_opts[@]}" source --print-uris "$1" 2>/dev/null | grep "\.orig\.tar" | grep -v -- '-contrib\.' | head -n 1 || true)"
  [ -n "$line" ] || die "no source package '$1' in bookworm's deb-src index"
  read -r uri file size sum <<<"$line"
  uri="${uri//\'/}"; sum="${sum#SHA256:}"
  if [ ! -f "$work/src/$file" ] || ! echo "$sum  $work/src/$file" | sha256sum -c --status; then
    curl -sSfL -o "$work/src/$file.tmp" "$uri" || die "download of $uri failed"
    echo "$sum  $work/src/$file.tmp" | sha256sum -c --status || die "$file: SHA-256 differs from the .dsc"
    mv "$work/src/$file.tmp" "$work/src/$file"
  fi
  echo "$work/src/$file"
}
# unpack TARBALL NAME -> fresh source tree at $work/build/NAME/src, prints it
unpack() {
  local dir="$work/build/$2/src"
  rm -rf "$dir" && mkdir -p "$dir"
  tar -xf "$1" -C "$dir" --strip-components=1
  echo "$dir"
}
# Each component is built once per (tarball, recipe): the stamp holds their hashes.
recipe_hash() { declare -f "build_$1" | sha256sum | cut -c1-16; }
is_built() { [ -f "$stage/$1/.stamp" ] && [ "$(cat "$stage/$1/.stamp")" = "$2" ]; }

export CFLAGS="-O2 -fPIC" CXXFLAGS="-O2 -fPIC"

build_zlib() {   # static, PIC: HDF5's deflate filter, libpng, OpenCV and our IDX reader link it
  local src; src="$(unpack "$1" zlib)"
  # Its own configure: the CMake build wants win32/ files the DFSG tarball drops.
  (cd "$src" && ./configure --static --prefix="$prefix" >/dev/null && make -j "$jobs" libz.a >/dev/null)
  install -D -m644 "$src/libz.a" "$stage/zlib$prefix/lib/libz.a"
  install -D -m644 "$src/zlib.h" "$stage/zlib$prefix/include/zlib.h"
  install -D -m644 "$src/zconf.h" "$stage/zlib$prefix/include/zconf.h"
}
build_libpng() {
  local src; src="$(unpack "$1" libpng)"
  cmake -S "$src" -B "$work/build/libpng/b" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DPNG_SHARED=OFF \
    -DPNG_TESTS=OFF -DPNG_EXECUTABLES=OFF -DZLIB_ROOT="$stage/zlib$prefix" \
    -DZLIB_LIBRARY="$stage/zlib$prefix/lib/libz.a" -DZLIB_INCLUDE_DIR="$stage/zlib$prefix/include" >/dev/null
  ninja -C "$work/build/libpng/b" -j "$jobs" >/dev/null
  DESTDIR="$stage/libpng" ninja -C "$work/build/libpng/b" install >/dev/null
}
build_libjpeg() {
  local src; src="$(unpack "$1" libjpeg)"
  cmake -S "$src" -B "$work/build/libjpeg/b" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR="$prefix/lib" -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DENABLE_SHARED=OFF -DENABLE_STATIC=ON -DWITH_TURBOJPEG=OFF -DWITH_JPEG8=ON >/dev/null
  ninja -C "$work/build/libjpeg/b" -j "$jobs" >/dev/null
  DESTDIR="$stage/libjpeg" ninja -C "$work/build/libjpeg/b" install >/dev/null
  rm -rf "$stage/libjpeg$prefix"/{bin,share}
}
build_openmpi() {
  local src; src="$(unpack "$1" openmpi)"
  mkdir -p "$work/build/openmpi/b"
  # glibc 2.36 (this machine) has arc4random; glibc 2.35 does not. The embedded libevent is told
  # glibc lacks it (ac_cv_func_* below) and so compiles its own static copy, whose names clash with
  # glibc 2.36's declarations: give the copy names of its own.
  sed -i 's|^#include "./arc4random.c"|#define arc4random ompi_ev_arc4random\n#define arc4random_buf ompi_ev_arc4random_buf\n#define arc4random_uniform ompi_ev_arc4random_uniform\n#define arc4random_stir ompi_ev_arc4random_stir\n#define arc4random_addrandom ompi_ev_arc4random_addrandom\n&|' \
    "$src/opal/mca/event/libevent2022/libevent/evutil_rand.c"
  # Embedded hwloc/libevent/PMIx; no fabric, no CUDA awareness, no Fortran, components linked in
  # (no dlopen: fewer files, nothing to find at run time); no netlink "reachable" component (it
  # links libnl-3, which a bare node lacks; Open MPI then judges reachability from addresses alone).
  (cd "$work/build/openmpi/b" && "$src/configure" --prefix="$prefix" --enable-shared --disable-static \
     --disable-dlopen --disable-mpi-fortran --disable-oshmem --disable-mpi-java --disable-man-pages \
     --with-hwloc=internal --with-libevent=internal --with-pmix=internal \
     --without-verbs --without-ucx --without-ofi --without-psm --without-psm2 --without-cuda \
     --without-x --disable-libxml2 --disable-pci --disable-libudev --disable-opencl --disable-nvml \
     --without-slurm-pmi --with-zlib=no --enable-mca-no-build=reachable-netlink \
     ac_cv_func_arc4random=no ac_cv_func_arc4random_buf=no >configure.log 2>&1) \
    || { tail -n 30 "$work/build/openmpi/b/configure.log"; die "Open MPI configure failed"; }
  make -C "$work/build/openmpi/b" -j "$jobs" >"$work/build/openmpi/make.log" 2>&1 \
    || { tail -n 40 "$work/build/openmpi/make.log"; die "Open MPI build failed"; }
  make -C "$work/build/openmpi/b" install DESTDIR="$stage/openmpi" >/dev/null 2>&1
  rm -rf "$stage/openmpi$prefix/share/man" "$stage/openmpi$prefix"/lib/*.la
}
build_hdf5() {   # parallel (mpio) HDF5 over the Open MPI above, deflate from the static zlib
  local src; src="$(unpack "$1" hdf5)"
  local mpi="$stage/openmpi$prefix"
  mkdir -p "$work/build/hdf5/b"
  # The staged Open MPI, not one this machine may have in /usr/lib (its RUNPATH is the prefix's).
  export OPAL_PREFIX="$mpi" LD_LIBRARY_PATH="$mpi/lib"
  (cd "$work/build/hdf5/b" && CC="$mpi/bin/mpicc" \
     CPPFLAGS="-I$stage/zlib$prefix/include" LDFLAGS="-L$stage/zlib$prefix/lib" \
     "$src/configure" --prefix="$prefix" --enable-parallel --enable-shared --disable-static \
     --disable-fortran --disable-cxx --disable-java --disable-tests --enable-build-mode=production \
     --with-zlib="$stage/zlib$prefix" >configure.log 2>&1) \
    || { tail -n 30 "$work/build/hdf5/b/configure.log"; die "HDF5 configure failed"; }
  make -C "$work/build/hdf5/b" -j "$jobs" \
    >"$work/build/hdf5/make.log" 2>&1 || { tail -n 40 "$work/build/hdf5/make.log"; die "HDF5 build failed"; }
  make -C "$work/build/hdf5/b" install DESTDIR="$stage/hdf5" >/dev/null 2>&1
  unset OPAL_PREFIX LD_LIBRARY_PATH
  rm -rf "$stage/hdf5$prefix"/lib/*.la "$stage/hdf5$prefix/share"
}
build_opencv() {   # core, imgproc, imgcodecs (PNG and JPEG) only, static
  local src; src="$(unpack "$1" opencv)"
  local z="$stage/zlib$prefix" png="$stage/libpng$prefix" jpg="$stage/libjpeg$prefix"
  cmake -S "$src" -B "$work/build/opencv/b" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DBUILD_LIST=core,imgproc,imgcodecs -DOPENCV_GENERATE_PKGCONFIG=OFF \
    -DBUILD_TESTS=OFF -DBUILD_PERF_TESTS=OFF -DBUILD_EXAMPLES=OFF -DBUILD_opencv_apps=OFF \
    -DBUILD_JAVA=OFF -DBUILD_opencv_python3=OFF -DBUILD_opencv_python2=OFF -DBUILD_DOCS=OFF \
    -DBUILD_ZLIB=OFF -DBUILD_PNG=OFF -DBUILD_JPEG=OFF -DBUILD_TIFF=OFF -DBUILD_WEBP=OFF \
    -DWITH_PNG=ON -DWITH_JPEG=ON -DWITH_TIFF=OFF -DWITH_WEBP=OFF -DWITH_OPENJPEG=OFF \
    -DWITH_JASPER=OFF -DWITH_OPENEXR=OFF -DWITH_IMGCODEC_HDR=OFF -DWITH_IMGCODEC_SUNRASTER=OFF \
    -DWITH_IMGCODEC_PXM=ON -DWITH_IMGCODEC_PFM=OFF -DWITH_GDAL=OFF -DWITH_GDCM=OFF \
    -DWITH_IPP=OFF -DWITH_ITT=OFF -DWITH_OPENCL=OFF -DWITH_CUDA=OFF -DWITH_EIGEN=OFF \
    -DWITH_LAPACK=OFF -DWITH_OPENMP=OFF -DWITH_TBB=OFF -DWITH_PTHREADS_PF=ON -DWITH_PROTOBUF=OFF \
    -DWITH_ADE=OFF -DWITH_QUIRC=OFF -DWITH_VA=OFF -DWITH_VA_INTEL=OFF -DWITH_GTK=OFF -DWITH_QT=OFF \
    -DWITH_FFMPEG=OFF -DWITH_GSTREAMER=OFF -DWITH_V4L=OFF -DWITH_1394=OFF -DWITH_OPENVX=OFF \
    -DWITH_CAROTENE=OFF -DCV_TRACE=OFF -DOPENCV_ENABLE_NONFREE=OFF -DENABLE_PRECOMPILED_HEADERS=OFF \
    -DZLIB_LIBRARY="$z/lib/libz.a" -DZLIB_INCLUDE_DIR="$z/include" \
    -DPNG_LIBRARY="$png/lib/libpng16.a" -DPNG_PNG_INCLUDE_DIR="$png/include" \
    -DJPEG_LIBRARY="$jpg/lib/libjpeg.a" -DJPEG_INCLUDE_DIR="$jpg/include" \
    >"$work/build/opencv/cmake.log" 2>&1 || { tail -n 30 "$work/build/opencv/cmake.log"; die "OpenCV configure failed"; }
  # imgcodecs must have found the codecs built above, or it would read neither PNG nor JPEG.
  grep -qE "^-- +PNG: +$png/lib/libpng16.a" "$work/build/opencv/cmake.log" \
    && grep -qE "^-- +JPEG: +$jpg/lib/libjpeg.a" "$work/build/opencv/cmake.log" \
    || { grep -E '^-- +(PNG|JPEG|ZLIB):' "$work/build/opencv/cmake.log" || true; die "OpenCV did not take the PNG/JPEG libraries above"; }
  ninja -C "$work/build/opencv/b" -j "$jobs" >"$work/build/opencv/make.log" 2>&1 \
    || { tail -n 40 "$work/build/opencv/make.log"; die "OpenCV build failed"; }
  DESTDIR="$stage/opencv" ninja -C "$work/build/opencv/b" install >/dev/null
  rm -rf "$stage/opencv$prefix"/{bin,share/licenses,share/opencv4/haarcascades,share/opencv4/lbpcascades}
  # OpenCVModules.cmake names the static codecs by the paths they had here: point them into the
  # prefix, where the zlib/libpng/libjpeg parts unpack.
  grep -rl "$stage" "$stage/opencv$prefix/lib/cmake" | xargs -r sed -i \
    -e "s#$stage/zlib$prefix#\${_IMPORT_PREFIX}#g" -e "s#$stage/libpng$prefix#\${_IMPORT_PREFIX}#g" \
    -e "s#$stage/libjpeg$prefix#\${_IMPORT_PREFIX}#g"
}
build_googletest() {   # Debian 12's googletest source (/usr/src/googletest, 1.12), static, PIC
  cmake -S /usr/src/googletest -B "$work/build/googletest/b" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DBUILD_GMOCK=ON -DINSTALL_GTEST=ON >/dev/null
  ninja -C "$work/build/googletest/b" -j "$jobs" >/dev/null
  DESTDIR="$stage/googletest" ninja -C "$work/build/googletest/b" install >/dev/null
}
build_boost() {   # Debian 12's Boost 1.74: the static Program_options and the headers it includes
  local arch=x86_64-linux-gnu d="$stage/boost$prefix"
  install -D -m644 "/usr/lib/$arch/libboost_program_options.a" "$d/lib/$arch/libboost_program_options.a"
  mkdir -p "$d/lib/$arch/cmake"
  local c
  for c in Boost-1.74.0 boost_headers-1.74.0 boost_program_options-1.74.0 BoostDetectToolset-1.74.0.cmake; do
    cp -r "/usr/lib/$arch/cmake/$c" "$d/lib/$arch/cmake/"
  done
  rm -f "$d/lib/$arch/cmake/boost_program_options-1.74.0/libboost_program_options-variant-shared.cmake"
  # The header closure: what program_options.hpp and any.hpp pull in, plus all of boost/config
  # (it picks headers by compiler and standard library, which differ on the node).
  printf '#include <boost/program_options.hpp>\n#include <boost/any.hpp>\n' >"$work/build/boost-closure.cpp"
  local std
  for std in c++17 c++20; do
    g++ -std="$std" -M "$work/build/boost-closure.cpp"
  done | tr ' \\' '\n\n' | grep '^/usr/include/boost/' | sort -u >"$work/build/boost-headers.txt"
  find /usr/include/boost/config /usr/include/boost/predef -type f >>"$work/build/boost-headers.txt"
  (cd /usr/include && sed 's#^/usr/include/##' "$work/build/boost-headers.txt" | sort -u \
     | tar -cf - -T - | tar -xf - -C "$(mkdir -p "$d/include" && echo "$d/include")")
}

# ---- build what is not built yet ---------------------------------------------------------------
declare -A tarball=(
  [zlib]="$(fetch_orig zlib)" [libpng]="$(fetch_orig libpng1.6)" [libjpeg]="$(fetch_orig libjpeg-turbo)"
  [openmpi]="$(fetch_orig openmpi)" [hdf5]="$(fetch_orig hdf5)" [opencv]="$(fetch_orig opencv)"
  [googletest]=/usr/src/googletest/CMakeLists.txt [boost]=/usr/lib/x86_64-linux-gnu/libboost_program_options.a
)
components=(zlib libpng libjpeg openmpi hdf5 opencv googletest boost)
for c in "${components[@]}"; do
  key="$(sha256sum "${tarball[$c]}" | cut -c1-16)-$(recipe_hash "$c")"
  if is_built "$c" "$key"; then log "$c: built before ($key)"; continue; fi
  t=$(date +%s); log "$c: building from $(basename "${tarball[$c]}")"
  rm -rf "${stage:?}/$c"; mkdir -p "$stage/$c"
  "build_$c" "${tarball[$c]}"
  echo "$key" >"$stage/$c/.stamp"
  log "$c: built in $(elapsed "$t") s"
done

# ---- relocatable: $ORIGIN RUNPATHs, and text that names the prefix, not the stage ----------------
# h5pcc and libhdf5.settings name the staged mpicc and zlib they were built with: the prefix's.
{ grep -rlI --null "$stage/" "$stage"/*/opt || true; } | xargs -0 -r sed -i -E "s#$stage/[a-z0-9]+$prefix#$prefix#g"
if grep -rlI "$stage/" "$stage"/*/opt; then die "the files above still name the build's stage ($stage)"; fi

for c in openmpi hdf5; do
  while IFS= read -r f; do
    file -b "$f" | grep -q '^ELF' || continue
    case "$f" in */bin/*) patchelf --set-rpath '$ORIGIN/../lib' "$f" ;; *) patchelf --set-rpath '$ORIGIN' "$f" ;; esac
  done < <(find "$stage/$c$prefix" -type f \( -path '*/bin/*' -o -name '*.so*' \))
done

# ---- the node-compatibility check: See Note [what the bundle builds, and for which node] ---------
max_glibc=2.35 max_glibcxx=3.4.30 max_cxxabi=1.3.13
allowed_needed='^(libc|libm|libdl|librt|libpthread|libutil|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so'
version_le() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$1" ]; }
# check_versions FILE LABEL: symbol versions the ELF file asks of glibc/libstdc++
check_versions() {
  local v bad=0
  for v in $(objdump -T "$1" 2>/dev/null | grep -oE '(GLIBC|GLIBCXX|CXXABI)_[0-9.]+' | sort -u); do
    case "$v" in
      GLIBC_*) version_le "${v#GLIBC_}" "$max_glibc" || { echo "  $2 needs $v (> GLIBC_$max_glibc)"; bad=1; } ;;
      GLIBCXX_*) version_le "${v#GLIBCXX_}" "$max_glibcxx" || { echo "  $2 needs $v (> GLIBCXX_$max_glibcxx)"; bad=1; } ;;
      CXXABI_*) version_le "${v#CXXABI_}" "$max_cxxabi" || { echo "  $2 needs $v (> CXXABI_$max_cxxabi)"; bad=1; } ;;
    esac
  done
  return $bad
}
check_elf_closure() {
  local bad=0 f n own
  own="$(find "$stage" -name '*.so*' -printf '%f\n' | sort -u)"
  while IFS= read -r f; do
    if [[ "$f" == *.a ]]; then
      # An archive's needs show once it is linked: all of it, into a throwaway position-independent
      # executable, as our programs link it (what it needs of other archives, and main, left unresolved).
      gcc -pie -o "$work/build/probe" -Wl,--whole-archive "$f" -Wl,--no-whole-archive \
        -Wl,--unresolved-symbols=ignore-all -lstdc++ -lm 2>"$work/build/probe.log" \
        || { echo "  $f: does not link into a position-independent executable: $(head -c 300 "$work/build/probe.log")"; bad=1; continue; }
      check_versions "$work/build/probe" "${f#$stage/}" || bad=1
      continue
    fi
    file -b "$f" | grep -q '^ELF' || continue
    check_versions "$f" "${f#$stage/}" || bad=1
    for n in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      [[ "$n" =~ $allowed_needed ]] || grep -qx "$n" <<<"$own" || { echo "  ${f#$stage/} needs $n, which a bare node lacks"; bad=1; }
    done
  done < <(find "$stage" -type f \( -name '*.so*' -o -name '*.a' -o -path '*/bin/*' \) ! -name '*.py')
  return $bad
}
log "checking every library and program against glibc $max_glibc, GLIBCXX_$max_glibcxx and a bare node's libraries"
check_elf_closure || die "the bundle would not run on the nodes it is for (above)"

# ---- parts and manifest -------------------------------------------------------------------------
# OUT is made whole or not at all: written as OUT.partial, then moved (see the check of OUT above).
final_out="$out" out="$out.partial"
rm -rf "$out" && mkdir -p "$out"
manifest="$out/MANIFEST.tsv"
commit="$(git -C "$repo" rev-parse HEAD)"
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  [ "$allow_dirty" = 1 ] || die "the checkout has uncommitted changes; the bundle packs HEAD ($commit): commit them, or pass --allow-dirty"
  log "warning: uncommitted changes are not in the bundle (it packs HEAD $commit)"
fi
{
  echo "# pix2pix-mpi GPU-node bundle, made $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release; echo "$PRETTY_NAME") by scripts/gpu-bundle.sh"
  echo "# commit $commit; built-in prefix $prefix; needs glibc >= $max_glibc, libstdc++ of GCC >= 12"
  echo "# unpack in this order (scripts/gpu-node-build.sh does); a part split in pieces lists each piece"
  printf 'order\tpart\tfile\tbytes\tsha256\tinto\tholds\n'
} >"$manifest"
order=0
# add_part NAME INTO HOLDS DIR [paths...]: packs DIR's contents (or PATHS in it) as NAME.tar.xz,
# split at the limit; INTO says where the node unpacks it: deps (the prefix), deps/SUBDIR, or top.
add_part() {
  local name="$1" into="$2" holds="$3" dir="$4"; shift 4
  order=$((order + 1))
  local tarball="$work/parts/$name.tar.xz"
  mkdir -p "$work/parts"
  tar -C "$dir" --owner=0 --group=0 --numeric-owner --sort=name -cf - "${@:-.}" | xz -T"$jobs" -6 >"$tarball"
  local size; size=$(stat -c %s "$tarball")
  if [ "$size" -le "$part_limit" ]; then
    cp "$tarball" "$out/"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$order" "$name" "$name.tar.xz" "$size" \
      "$(sha256sum "$tarball" | cut -d' ' -f1)" "$into" "$holds" >>"$manifest"
  else
    split -b "$part_limit" -d -a 2 "$tarball" "$out/$name.tar.xz.part"
    local piece
    for piece in "$out/$name.tar.xz.part"*; do
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$order" "$name" "$(basename "$piece")" "$(stat -c %s "$piece")" \
        "$(sha256sum "$piece" | cut -d' ' -f1)" "$into" "$holds (piece of $name.tar.xz)" >>"$manifest"
    done
  fi
  log "part $order: $name ($(( size / 1024 )) KiB)"
}
add_part openmpi deps "Open MPI 4.1.4 (shared, relocatable: OPAL_PREFIX; shared memory + TCP, no fabric, not CUDA-aware), mpicc, mpirun" "$stage/openmpi$prefix"
add_part hdf5 deps "HDF5 1.10.8, parallel (mpio), C library, headers and h5pcc; deflate from the zlib part" "$stage/hdf5$prefix"
rm -rf "$work/codecs" && mkdir -p "$work/codecs"
for c in zlib libpng libjpeg; do cp -a "$stage/$c$prefix/." "$work/codecs/"; done
add_part codecs deps "zlib 1.2.13, libpng 1.6.39, libjpeg-turbo 2.1.5: static, PIC, with headers" "$work/codecs"
add_part opencv deps "OpenCV 4.6.0: core, imgproc, imgcodecs (PNG, JPEG, PNM), static, with its CMake package" "$stage/opencv$prefix"
add_part boost deps "Boost 1.74 Program_options (static) and the headers it includes, with Boost's CMake packages" "$stage/boost$prefix"
add_part googletest deps "GoogleTest and GoogleMock 1.12.1 (static) with their CMake package" "$stage/googletest$prefix"
add_part fashion-mnist deps/share/datasets "Fashion-MNIST (train and t10k images and labels, IDX .gz) for the tests and the smoke" \
  /usr/share/datasets fashion-mnist
src_dir="$work/source" && rm -rf "$src_dir" && mkdir -p "$src_dir/pix2pix-mpi"
git -C "$repo" archive HEAD | tar -xf - -C "$src_dir/pix2pix-mpi"
echo "$commit" >"$src_dir/pix2pix-mpi/.bundle-commit"
add_part source top "pix2pix-mpi source at $commit" "$src_dir" pix2pix-mpi
cp "$repo/scripts/gpu-node-build.sh" "$repo/scripts/gpu-node-run.sh" "$out/"
rm -rf "$final_out" && mv "$out" "$final_out" && out="$final_out"
log "wrote $(ls "$out" | wc -l) files, $(du -sm "$out" | cut -f1) MiB, to $out in $(elapsed "$t_all") s"
log "on the node: bash $(basename "$out")/gpu-node-run.sh $(basename "$out")   (build, smoke, tests; docs/platforms.md)"
exit 0
}
