# Libraries benchdesk opens on first use instead of linking (src/base/lazylib.h,
# docs/architecture.md#lazy-libraries): for each, the soname to dlopen() -- read from the
# very library the headers belong to, so the two always match -- and the Debian package
# that ships it (for the error message, and for the package's Depends, which
# dpkg-shlibdeps cannot see for a library that is not linked).
#
# bd_lazy_library(PREFIX TARGET) sets ${PREFIX}_SONAME and ${PREFIX}_PACKAGE from the
# imported pkg-config target TARGET, and appends the package to BD_LAZY_PACKAGES.
find_program(BD_OBJDUMP NAMES objdump)
find_program(BD_DPKG_QUERY NAMES dpkg-query)
function(bd_lazy_library prefix target)
  get_target_property(libs ${target} INTERFACE_LINK_LIBRARIES)
  set(file "")
  foreach(l ${libs})
    if(l MATCHES "\\.so$" AND EXISTS "${l}")
      set(file "${l}")
      break()
    endif()
  endforeach()
  if(NOT file OR NOT BD_OBJDUMP)
    message(FATAL_ERROR "benchdesk: cannot find the shared library of ${target} (or objdump) to read its soname: install binutils and the -dev package")
  endif()
  execute_process(COMMAND ${BD_OBJDUMP} -p "${file}" OUTPUT_VARIABLE dyn RESULT_VARIABLE rc)
  string(REGEX MATCH "SONAME +([^ \n]+)" m "${dyn}")
  if(NOT rc EQUAL 0 OR NOT CMAKE_MATCH_1)
    message(FATAL_ERROR "benchdesk: ${file} has no soname")
  endif()
  set(soname "${CMAKE_MATCH_1}")
  get_filename_component(dir "${file}" DIRECTORY)
  set(package "${soname}")
  if(BD_DPKG_QUERY)
    execute_process(COMMAND ${BD_DPKG_QUERY} -S "${dir}/${soname}" OUTPUT_VARIABLE owner
                    RESULT_VARIABLE qrc ERROR_QUIET)
    if(qrc EQUAL 0 AND owner MATCHES "^([^:, ]+)")
      set(package "${CMAKE_MATCH_1}")
    endif()
  endif()
  set(${prefix}_SONAME "${soname}" PARENT_SCOPE)
  set(${prefix}_PACKAGE "${package}" PARENT_SCOPE)
  set(BD_LAZY_PACKAGES ${BD_LAZY_PACKAGES} ${package} PARENT_SCOPE)
  message(STATUS "opened on first use: ${soname} (${package})")
endfunction()

set(BD_LAZY_PACKAGES "")
bd_lazy_library(BD_LIBGIT2 PkgConfig::LIBGIT2)
bd_lazy_library(BD_LIBXML2 PkgConfig::LIBXML_2_0)

# bd_use_lazy_library(TARGET IMPORTED PREFIX): TARGET compiles against IMPORTED's headers
# without linking it, and gets PREFIX_SONAME and PREFIX_PACKAGE as string macros.
function(bd_use_lazy_library target imported prefix)
  target_include_directories(${target}
                             PUBLIC $<TARGET_PROPERTY:${imported},INTERFACE_INCLUDE_DIRECTORIES>)
  target_compile_options(${target} PUBLIC $<TARGET_PROPERTY:${imported},INTERFACE_COMPILE_OPTIONS>)
  target_compile_definitions(${target} PRIVATE ${prefix}_SONAME="${${prefix}_SONAME}"
                                               ${prefix}_PACKAGE="${${prefix}_PACKAGE}")
endfunction()
