# The environment of a device bundle (tests/gpu/make_device_bundle.sh copies this file to
# <bundle>/env.sh). Source it on the GPU machine:
#   source device-bundle/env.sh
# dtsim, mpirun and the Debian libraries they need come from the bundle. The GPU libraries come
# from the machine: dtsim links the CUDA runtime statically and needs NCCL (libnccl.so.2) and
# cuBLAS (libcublas.so.<major>, loaded when a GPU run starts) — from Python wheels first (PyTorch
# images: CUDA 12 wheels keep them in site-packages/nvidia/<package>/lib, CUDA 13 wheels in
# site-packages/nvidia/cu13/lib), then from a CUDA toolkit under /usr/local/cuda. Every
# nvidia/*/lib and nvidia/*/*/lib folder of every sys.path entry of python3 goes on
# LD_LIBRARY_PATH; `dtsim info` then prints which NCCL and cuBLAS were loaded, and from where.
bundle="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export OPAL_PREFIX="$bundle/usr" PMIX_PREFIX="$bundle/usr/lib/x86_64-linux-gnu/pmix2"
export PMIX_MCA_mca_base_component_path="$PMIX_PREFIX/lib/pmix"
export OMPI_MCA_mca_base_component_show_load_errors=0 OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

gpu_libraries=""
add_gpu_library_folder() {
  [ -d "$1" ] || return 0
  case ":$gpu_libraries:" in *":$1:"*) return 0 ;; esac
  gpu_libraries="${gpu_libraries:+$gpu_libraries:}$1"
}
if command -v python3 >/dev/null 2>&1; then
  while IFS= read -r site; do
    for folder in "$site"/nvidia/*/lib "$site"/nvidia/*/*/lib; do add_gpu_library_folder "$folder"; done
  done < <(python3 -c 'import sys; print("\n".join(p for p in sys.path if p))' 2>/dev/null)
fi
for folder in /usr/local/cuda/lib64 /usr/local/cuda/lib; do add_gpu_library_folder "$folder"; done

export LD_LIBRARY_PATH="$bundle/usr/lib/x86_64-linux-gnu:$bundle/usr/lib/x86_64-linux-gnu/openmpi/lib${gpu_libraries:+:$gpu_libraries}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$bundle/bin:$bundle/usr/bin:$PATH"
export DTSIM_PATH="$bundle/bin/dtsim" DTSIM_MPIEXEC="$bundle/usr/bin/mpirun"
export DTSIM_GPU_LIBRARIES="$gpu_libraries"  # for the record (run_gpu_checks.sh prints it)
