# Decides whether the GPU-only sources (raw CUDA runtime + NCCL, dist/ only) are compiled.
# AUTO: when both the CUDA toolkit and NCCL are found. ON: required. OFF: never.
# No CUDA compiler is needed: the sources are C++ against cuda_runtime.h and nccl.h.
set(PIX2PIX_HAVE_CUDA OFF)
if(NOT PIX2PIX_WITH_CUDA STREQUAL "OFF")
  if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    find_package(NCCL QUIET)
  endif()
  if(CUDAToolkit_FOUND AND NCCL_FOUND)
    set(PIX2PIX_HAVE_CUDA ON)
  elseif(PIX2PIX_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "PIX2PIX_WITH_CUDA=ON but the CUDA toolkit (found: ${CUDAToolkit_FOUND}) or NCCL "
                        "(found: ${NCCL_FOUND}) is missing; set CUDAToolkit_ROOT and NCCL_HOME")
  elseif(NOT PIX2PIX_WITH_CUDA STREQUAL "AUTO")
    message(FATAL_ERROR "PIX2PIX_WITH_CUDA must be AUTO, ON or OFF, not '${PIX2PIX_WITH_CUDA}'")
  endif()
endif()

# Whether LibTorch itself was built with CUDA (a pip or CUDA LibTorch: libc10_cuda beside it), which
# the whole-step CUDA graph needs (See Note [CUDA graphs need LibTorch's CUDA half],
# src/dist/step_graph_cuda.cpp). Debian's LibTorch is CPU-only: there the graph's source is compiled
# (to check it) but not linked, and --cuda-graph on is refused.
set(PIX2PIX_HAVE_TORCH_CUDA OFF)
if(PIX2PIX_HAVE_CUDA AND C10_CUDA_LIBRARY)
  set(PIX2PIX_HAVE_TORCH_CUDA ON)
endif()
