# Sourced by the gpu-*.sh scripts on the GPU machine: the bundle's libraries
# (HDF5 and its dependencies) and the CUDA install's cuBLAS on the loader path.
# Expects $bundle to be set.
cublas=$( (ldconfig -p | awk '/libcublas\.so\.13/ {print $NF}'; ls /usr/local/cuda*/lib*/libcublas.so.13 \
  /usr/local/cuda*/targets/*/lib/libcublas.so.13 2>/dev/null) | head -n 1)
export LD_LIBRARY_PATH="$bundle/lib:${cublas:+$(dirname "$cublas"):}${LD_LIBRARY_PATH:-}"
