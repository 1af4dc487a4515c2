#!/usr/bin/env bash
# Builds Kokkos 3.4.01 from Debian's trilinos source package into a cache prefix.
#
#   scripts/build_kokkos.sh host|cuda PREFIX [CUDA_ARCH [HOST_ARCH]]
#
# HOST_ARCH, a -march value (native, x86-64-v4, ...), compiles Kokkos for that host ISA; without
# it, for the compiler's baseline.
# The source comes through apt by package name, from deb-src entries derived at run time from
# this machine's own apt sources; the orig tarball's SHA-256 is checked; only packages/kokkos is
# extracted; the project's patches (cmake/kokkos-patches/) are applied. A prefix that already
# holds a build with the same options and patches is reused.
set -euo pipefail

config=${1:?usage: build_kokkos.sh host|cuda PREFIX [CUDA_ARCH [HOST_ARCH]]}
prefix=${2:?usage: build_kokkos.sh host|cuda PREFIX [CUDA_ARCH [HOST_ARCH]]}
cuda_arch=${3:-90}
host_arch=${4:-}

repo=$(cd "$(dirname "$0")/.." && pwd)
patch_dir="$repo/cmake/kokkos-patches"
src_package=trilinos
src_version=13.2.0-4
orig_tarball=trilinos_13.2.0.orig.tar.gz
orig_sha256=0ddb47784ba7b8a6b9a07a4822b33be508feb4ccd54301b2a5d10c9e54524b90
deps_dir=$(dirname "$prefix")
download_dir="$deps_dir/download"
jobs=${KBENCH_JOBS:-$(nproc)}

die() {
  echo "build_kokkos: $*" >&2
  exit 1
}

case "$config" in
  host) options=(-DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_OPENMP=ON) ;;
  cuda)
    case "$cuda_arch" in
      75) arch_option=Kokkos_ARCH_TURING75 ;;
      80) arch_option=Kokkos_ARCH_AMPERE80 ;;
      86) arch_option=Kokkos_ARCH_AMPERE86 ;;
      90) arch_option=Kokkos_ARCH_HOPPER90 ;;
      *) die "CUDA architecture $cuda_arch is not one this Kokkos knows (75, 80, 86, 90)" ;;
    esac
    command -v nvcc >/dev/null || die "the cuda configuration needs nvcc on PATH"
    options=(-DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_CUDA=ON
      -DKokkos_ENABLE_CUDA_LAMBDA=ON "-D$arch_option=ON")
    ;;
  *) die "unknown configuration '$config' (host or cuda)" ;;
esac
if [[ -n $host_arch ]]; then
  [[ $host_arch =~ ^[A-Za-z0-9._-]+$ ]] || die "host architecture '$host_arch' is not a -march value"
  options+=("-DCMAKE_CXX_FLAGS=${CXXFLAGS:-} -march=$host_arch")
fi

stamp="$prefix/.kbench-stamp"
stamp_text="$src_version ${options[*]} $(cat "$patch_dir"/*.patch | sha256sum | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$stamp_text" ]]; then
  exit 0
fi

# Writes deb-src twins of every enabled deb source of this machine into $1.
derive_source_entries() {
  local out=$1 f
  shopt -s nullglob
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f "$f" ]] && sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f"
  done >"$out/derived.list"
  for f in /etc/apt/sources.list.d/*.sources; do
    sed 's/^Types:.*/Types: deb-src/' "$f" >"$out/$(basename "$f")"
  done
  shopt -u nullglob
}

fetch_source() {
  local apt_dir
  apt_dir=$(mktemp -d)
  mkdir -p "$apt_dir/parts" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  derive_source_entries "$apt_dir/parts"
  local apt_options=(-o "Dir::Etc::SourceList=$apt_dir/parts/derived.list"
    -o "Dir::Etc::SourceParts=$apt_dir/parts" -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache=$apt_dir/cache" -o "APT::Sandbox::User=root")
  echo "build_kokkos: fetching the $src_package $src_version source package through apt"
  if ! apt-get "${apt_options[@]}" update -qq >"$apt_dir/update.log" 2>&1 ||
    ! (cd "$download_dir" &&
      apt-get "${apt_options[@]}" source --download-only -qq "$src_package=$src_version" \
        >"$apt_dir/source.log" 2>&1); then
    cat "$apt_dir"/*.log >&2 || true
    rm -rf "$apt_dir"
    die "could not fetch Debian's $src_package $src_version source package with apt.
  This needs a working Debian apt source (deb lines in /etc/apt/sources.list or
  /etc/apt/sources.list.d/) whose archive also serves source packages.
  Alternatives: put $orig_tarball into $download_dir by hand,
  or install Kokkos >= 3.4 yourself and pass -DKokkos_ROOT=... to CMake."
  fi
  rm -rf "$apt_dir"
}

mkdir -p "$download_dir"
[[ -f "$download_dir/$orig_tarball" ]] || fetch_source
echo "$orig_sha256  $download_dir/$orig_tarball" | sha256sum -c --quiet - ||
  die "$download_dir/$orig_tarball does not have the expected SHA-256; delete it and run again"

work=$(mktemp -d "$deps_dir/kokkos-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xzf "$download_dir/$orig_tarball" -C "$work" --strip-components=2 --wildcards '*/packages/kokkos/*'
source_dir="$work/kokkos"
for p in "$patch_dir"/*.patch; do
  patch -s -p1 -d "$source_dir" <"$p" || die "patch $(basename "$p") does not apply"
done

compiler_options=()
if [[ "$config" == cuda ]]; then
  compiler_options=(-DCMAKE_CXX_COMPILER="$source_dir/bin/nvcc_wrapper")
fi

echo "build_kokkos: building Kokkos 3.4.01 ($config) into $prefix with $jobs jobs"
rm -rf "$prefix"
cmake -S "$source_dir" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 \
  -DCMAKE_INSTALL_PREFIX="$prefix" "${compiler_options[@]}" "${options[@]}" >"$work/configure.log" 2>&1 ||
  {
    tail -40 "$work/configure.log" >&2
    die "configuring Kokkos failed"
  }
cmake --build "$work/build" -j "$jobs" >"$work/build.log" 2>&1 || {
  tail -60 "$work/build.log" >&2
  die "building Kokkos failed"
}
cmake --install "$work/build" >/dev/null
echo "$stamp_text" >"$stamp"
echo "build_kokkos: done"
