#!/usr/bin/env bash
# Packs what a bare GPU machine needs to run dtsim's GPU checks without building there: the
# dtsim and gpu_tests binaries (stripped; the CUDA runtime linked in statically), OpenMPI with
# its plugins, PMIx, OpenBLAS and the other Debian libraries they load — not the driver, cuBLAS
# or NCCL, which a GPU machine has (PyTorch's nvidia-* wheels, or a CUDA toolkit) — and env.sh
# (tests/gpu/bundle_env.sh), which finds those and points everything there.
#
#   ./dev.sh build && tests/gpu/make_device_bundle.sh [DIR | FILE.tar.gz]   # default: device-bundle/
#   # on the GPU machine, from the repository root:
#   DTSIM_BUNDLE=device-bundle tests/gpu/run_gpu_checks.sh     # or DTSIM_BUNDLE=FILE.tar.gz
# A .tar.gz (about 20 MiB) is what to carry to a machine that takes a limited size with it.
#
# The bundle is about 50 MiB; it relies on the machine's glibc and libstdc++ being at least
# Debian 12's (2.36, GCC 12): run_gpu_checks.sh checks the loader first and says which library
# it could not start.
set -euo pipefail
cd "$(dirname "$0")/../.."
bundle="${1:-device-bundle}"
archive=""
if [[ "$bundle" == *.tar.gz ]]; then
  archive="$(cd "$(dirname "$bundle")" && pwd)/$(basename "$bundle")"
  bundle="$(mktemp -d)/device-bundle"
fi
build="${DTSIM_BUILD:-build}"
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/usr/bin" "$bundle/usr/lib/x86_64-linux-gnu" "$bundle/usr/share"
libdir="$bundle/usr/lib/x86_64-linux-gnu"

for binary in "$build/scenarios/dtsim" "$build/tests/gpu_tests"; do
  strip -o "$bundle/bin/$(basename "$binary")" "$binary"
done
# OpenMPI's launcher and daemon, plugins and help texts; PMIx's plugins (paths as Debian 12
# installs them: OPAL_PREFIX and PMIX_PREFIX relocate them to the bundle).
cp -a /usr/bin/orterun /usr/bin/orted "$bundle/usr/bin/"
ln -s orterun "$bundle/usr/bin/mpirun"
mkdir -p "$libdir/openmpi/lib"
cp -a /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 "$libdir/openmpi/lib/"
# One node, shared memory: no InfiniBand, UCX, libfabric, PSM or OpenSHMEM plugins (and none of
# the libraries they would pull in).
find "$libdir/openmpi/lib/openmpi3" \( -name '*ucx*' -o -name '*ofi*' -o -name '*openib*' -o -name '*psm*' \
  -o -name '*portals*' -o -name 'mca_spml_*' -o -name 'mca_sshmem_*' -o -name 'mca_scoll_*' -o -name 'mca_atomic_*' \
  -o -name 'mca_mtl_*' -o -name 'mca_pml_cm*' -o -name '*verbs*' -o -name '*usnic*' \) -delete
cp -a /usr/lib/x86_64-linux-gnu/pmix2 "$libdir/"
rm -rf "$libdir/pmix2/include" "$libdir/pmix2/share/man"
find "$libdir/pmix2" -name '*.a' -delete  # static archives: nothing links here
cp -a /usr/share/openmpi "$bundle/usr/share/"
[ -d /usr/share/pmix ] && cp -a /usr/share/pmix "$bundle/usr/share/"

# Every library those need, except the C and C++ runtimes (the machine's own, newer) and CUDA's.
system='^(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnccl)\.so'
needed() {
  find "$bundle/bin" "$bundle/usr/bin" "$libdir" -type f \( -perm -u+x -o -name '*.so*' \) -print0 |
    xargs -0 -n 32 ldd 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u
}
for _ in 1 2 3; do  # dependencies of dependencies
  while read -r library; do
    name="$(basename "$library")"
    [[ "$name" =~ $system ]] && continue
    [ -e "$libdir/$name" ] || cp -L "$library" "$libdir/$name"
  done < <(needed)
done

cp tests/gpu/bundle_env.sh "$bundle/env.sh"
if [ -n "$archive" ]; then
  tar -czf "$archive" -C "$bundle" .
  rm -rf "$(dirname "$bundle")"
  du -sh "$archive"
else
  du -sh "$bundle"
fi
