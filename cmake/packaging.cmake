# Install layout and the Debian package (CPack). Paths follow GNUInstallDirs; the package
# installs under /usr. The version comes from the VERSION file (top-level CMakeLists.txt).
include(GNUInstallDirs)
set(BD_PKG_DIR ${PROJECT_BINARY_DIR}/packaging)
set(BD_DOC_DIR ${CMAKE_INSTALL_DATAROOTDIR}/doc/benchdesk)

# `cmake --install` and `cpack` install what `cmake --build` built; they do not build the
# whole tree (the unit tests) again first.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

# Every directory the install creates is 0755 whatever the umask (lintian checks it).
set(CMAKE_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

# The changelog's newest entry must name the version in VERSION: one place to bump, and
# a mismatch stops the configure instead of shipping a package that contradicts itself.
file(STRINGS ${PROJECT_SOURCE_DIR}/cmake/debian/changelog BD_CHANGELOG_HEAD LIMIT_COUNT 1)
if(NOT BD_CHANGELOG_HEAD MATCHES "^benchdesk \\(${PROJECT_VERSION}\\) ")
  message(FATAL_ERROR "benchdesk: cmake/debian/changelog starts with '${BD_CHANGELOG_HEAD}', "
                      "not version ${PROJECT_VERSION} from VERSION: add a changelog entry")
endif()

# Man page (its footer given the version) and changelog go in gzip'd (-n: no name or
# time stamp, so builds repeat).
find_program(BD_GZIP gzip REQUIRED)
add_custom_command(
  OUTPUT ${BD_PKG_DIR}/benchdesk.1.gz ${BD_PKG_DIR}/changelog.gz
  COMMAND ${CMAKE_COMMAND} -E make_directory ${BD_PKG_DIR}
  COMMAND ${CMAKE_COMMAND} -DIN=${PROJECT_SOURCE_DIR}/docs/benchdesk.1
          -DOUT=${BD_PKG_DIR}/benchdesk.1 -DVERSION=${PROJECT_VERSION}
          -P ${PROJECT_SOURCE_DIR}/cmake/manpage.cmake
  COMMAND ${BD_GZIP} -9n -f ${BD_PKG_DIR}/benchdesk.1
  COMMAND ${BD_GZIP} -9n -c ${PROJECT_SOURCE_DIR}/cmake/debian/changelog > ${BD_PKG_DIR}/changelog.gz
  DEPENDS ${PROJECT_SOURCE_DIR}/docs/benchdesk.1 ${PROJECT_SOURCE_DIR}/cmake/manpage.cmake
          ${PROJECT_SOURCE_DIR}/cmake/debian/changelog
  COMMENT "Compressing the man page and the changelog"
  VERBATIM)
add_custom_target(benchdesk_pkgdocs ALL DEPENDS ${BD_PKG_DIR}/benchdesk.1.gz ${BD_PKG_DIR}/changelog.gz)

install(FILES ${BD_PKG_DIR}/benchdesk.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${PROJECT_SOURCE_DIR}/completion/benchdesk.bash
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions RENAME benchdesk)
# The TUI finds these at <bin>/../share/benchdesk/themes (ui/theme.c).
file(GLOB BD_THEME_FILES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/themes/*.yaml)
install(FILES ${BD_THEME_FILES} DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/benchdesk/themes)
file(GLOB BD_DOC_FILES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
# The licence goes with the docs: LICENSE as it is in the source tree, and the Debian
# copyright file that carries the same terms.
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE ${BD_DOC_FILES}
              ${PROJECT_SOURCE_DIR}/cmake/debian/copyright ${BD_PKG_DIR}/changelog.gz
        DESTINATION ${BD_DOC_DIR})

# ---- the .deb: `cpack` in a release build dir (./scripts/setup --build makes one)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME benchdesk)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "terminal workstation for a signed evaluation bench")
set(CPACK_PACKAGE_DESCRIPTION
    "benchdesk keeps an evaluation bench honest: every case and task class is
pinned by a BLAKE3 digest and signed by two people with GnuPG, rubrics run in
a sandbox, and every score goes into an append-only, hash-chained history.
It has a TUI (ncurses) and headless commands for scripts.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "benchdesk maintainers <maintainers@benchdesk.invalid>")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends: the shared libraries the binary really links, as dpkg-shlibdeps finds them.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Depends, beside the libraries: the programs the binary runs. Every signature check
# (verify, run, list) drives gpg through GPGME (gnupg), rubrics run under python3 by
# default, and the TUI's pager falls back to less.
# And the libraries opened on first use (cmake/lazylibs.cmake), which dpkg-shlibdeps cannot
# see because the binary does not link them.
string(REPLACE ";" ", " bd_lazy_depends "${BD_LAZY_PACKAGES}")
set(CPACK_DEBIAN_PACKAGE_DEPENDS "gnupg, python3, less, ${bd_lazy_depends}")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "bash-completion, git")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
include(CPack)
