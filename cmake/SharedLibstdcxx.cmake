# pix2pix_shared_libstdcxx(<out-var> <compiler> [<folder>...]): the shared file of the C++ runtime
# to name on the link line (See Note [one C++ runtime] in src/CMakeLists.txt): the libstdc++.so
# that <compiler> finds, else its libstdc++.so.6, else the libstdc++.so.6 of the first <folder>
# that has one; "" where there is none. A path that does not resolve to a file (a dangling
# symlink, as a copied toolchain may hold) is passed over, as the linker passes it over.
function(pix2pix_shared_libstdcxx out compiler)
  foreach(name libstdc++.so libstdc++.so.6)
    execute_process(COMMAND "${compiler}" -print-file-name=${name} OUTPUT_VARIABLE found
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(IS_ABSOLUTE "${found}" AND EXISTS "${found}" AND NOT IS_DIRECTORY "${found}")
      set(${out} "${found}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  foreach(folder IN LISTS ARGN)
    if(EXISTS "${folder}/libstdc++.so.6" AND NOT IS_DIRECTORY "${folder}/libstdc++.so.6")
      set(${out} "${folder}/libstdc++.so.6" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()
