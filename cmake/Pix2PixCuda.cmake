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

# The fused kernels (See Note [fused bias and LeakyReLU],
# include/pix2pix/dist/fused_activation.hpp) need a CUDA compiler: the toolkit's nvcc, with the
# project's C++ compiler as its host compiler. Compiled wherever the toolkit has one (CI checks them
# there); linked where LibTorch has its CUDA half. The shared CUDA runtime, the one cudart the
# communicator and LibTorch use. Architectures: A100 (8.0) and H100/H200 (9.0, with its PTX for
# newer GPUs), unless CMAKE_CUDA_ARCHITECTURES says otherwise.
set(PIX2PIX_HAVE_CUDA_KERNELS OFF)
if(PIX2PIX_HAVE_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND CUDAToolkit_NVCC_EXECUTABLE AND EXISTS "${CUDAToolkit_NVCC_EXECUTABLE}")
    set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}")
  endif()
  if(NOT DEFINED CMAKE_CUDA_HOST_COMPILER)
    set(CMAKE_CUDA_HOST_COMPILER "${CMAKE_CXX_COMPILER}")
  endif()
  set(ENV{CUDAHOSTCXX} "${CMAKE_CUDA_HOST_COMPILER}")  # check_language's trial takes the same host compiler
  include(CheckLanguage)
  check_language(CUDA)
  # enable_language ends the configure where it fails; a node whose nvcc refuses our compiler builds
  # without the kernels instead (--fused-kernels on is then refused): a CUDA program is tried first.
  if(CMAKE_CUDA_COMPILER)
    set(trial "${CMAKE_BINARY_DIR}/CMakeFiles/pix2pix-nvcc-trial")
    file(WRITE "${trial}/trial.cu" "__global__ void trial() {}\nint main() { trial<<<1, 1>>>(); return 0; }\n")
    execute_process(COMMAND "${CMAKE_CUDA_COMPILER}" -ccbin "${CMAKE_CUDA_HOST_COMPILER}" -std=c++17 trial.cu -o trial
                    WORKING_DIRECTORY "${trial}" RESULT_VARIABLE trial_status OUTPUT_VARIABLE trial_output
                    ERROR_VARIABLE trial_output)
    if(trial_status EQUAL 0)
      if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
        set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
      endif()
      set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
      enable_language(CUDA)
      set(PIX2PIX_HAVE_CUDA_KERNELS ON)
    else()
      message(WARNING "${CMAKE_CUDA_COMPILER} with the host compiler ${CMAKE_CUDA_HOST_COMPILER} cannot build a CUDA "
                      "program, so the fused kernels are not built (--fused-kernels on is refused): ${trial_output}")
    endif()
  endif()
endif()
