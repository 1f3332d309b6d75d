# cmake -DIN=X.cu -DOUT=X.cpp -P kernels_on_cpu.cmake: the kernels' CUDA source as C++ for
# tests/support/cuda_on_cpu.hpp (See Note [CUDA kernels on a CPU]): each launch
# `k<<<grid, block, shared, stream>>>(args)` becomes `k | Launch{grid, block, shared, stream} | arguments(args)`.
file(READ "${IN}" source)
string(REGEX MATCHALL "<<<" launches "${source}")
list(LENGTH launches count)
if(count EQUAL 0)
  message(FATAL_ERROR "${IN}: no kernel launch (<<<...>>>) to rewrite")
endif()
string(REPLACE "<<<" " | ::pix2pix::kernels_on_cpu::Launch{" source "${source}")
string(REPLACE ">>>(" "} | ::pix2pix::kernels_on_cpu::arguments(" source "${source}")
if(source MATCHES ">>>")
  message(FATAL_ERROR "${IN}: a launch not followed by its arguments (>>>( expected)")
endif()
# Errors and warnings name the .cu's own lines.
file(WRITE "${OUT}.new" "#line 1 \"${IN}\"\n${source}")
configure_file("${OUT}.new" "${OUT}" COPYONLY)  # rewritten only where it changed
file(REMOVE "${OUT}.new")
