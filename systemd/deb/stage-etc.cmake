# CPACK_PRE_BUILD_SCRIPTS: runs on the staged package tree before the .deb
# is made. The default layout is installed to CMAKE_INSTALL_FULL_SYSCONFDIR,
# an absolute path fixed at configure time: /etc with the /usr prefix, but
# /usr/local/etc with CMake's default prefix, which a .deb must not contain
# (and then /etc/layoutd/layouts.d would be empty). The package always
# installs to /usr, so its configuration belongs in /etc: move it there.
# (conffiles lists /etc/layoutd/layouts.d/default.yaml.)
file(GLOB _stages LIST_DIRECTORIES true "${CPACK_TEMPORARY_DIRECTORY}/usr/local/etc"
     "${CPACK_TEMPORARY_DIRECTORY}/*/usr/local/etc")
foreach(_etc IN LISTS _stages)
  if(IS_DIRECTORY "${_etc}")
    get_filename_component(_local "${_etc}" DIRECTORY)
    get_filename_component(_usr "${_local}" DIRECTORY)
    get_filename_component(_top "${_usr}" DIRECTORY)
    file(COPY "${_etc}/" DESTINATION "${_top}/etc")
    file(REMOVE_RECURSE "${_etc}")
    file(GLOB _left "${_local}/*")
    if(NOT _left)
      file(REMOVE_RECURSE "${_local}")
    endif()
  endif()
endforeach()
