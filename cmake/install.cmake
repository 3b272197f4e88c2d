# Install layout (`cmake --install`) and the Debian package (`cpack -G DEB`).
#   bin/sandgate, bin/sandgate-connect
#   bin/sandgate-load                              the load tool (bench/load), built with the benchmarks
#   share/sandgate/blocked.txt                     the blocklist template (also embedded)
#   share/sandgate/sandgate.example.toml           an example config file (--config)
#   share/sandgate/presets/*.txt                   the allowlist presets (also embedded)
#   share/sandgate/budgets/*.txt                   budgets suggestions, to copy
#   share/sandgate/launchd/io.sandgate.gate.plist  launchd agent, for ~/Library/LaunchAgents
#   lib/systemd/user/sandgate.service              systemd user unit
#   share/doc/sandgate/README.md, docs/*.md       the README and the documentation pages
#   share/doc/sandgate/LICENSE, THIRD-PARTY-NOTICES, copyright, changelog.gz
#                                                  the licence, the notices of what is linked, and
#                                                  the Debian package's copyright and changelog
#   share/man/man1/*.1.gz, share/man/man5/*.5.gz   the manual pages (cmake/man.cmake)
# The package holds the same files under /usr; `cmake --install` defaults to /usr/local.
include(GNUInstallDirs)

install(TARGETS sandgate sandgate-connect RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# `sandgate-load compare` benchmarks any HTTP CONNECT or SOCKS5 proxy on loopback
# (docs/performance.md).
if(TARGET sandgate-load)
  install(TARGETS sandgate-load RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(FILES ${PROJECT_SOURCE_DIR}/config/blocked.txt
              ${PROJECT_SOURCE_DIR}/config/sandgate.example.toml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/sandgate)
# The allowlist presets (`--allowlist preset:NAME` reads the embedded copies; these are for
# reading, and for copying into an allowlist of one's own).
file(GLOB sandgate_presets ${PROJECT_SOURCE_DIR}/config/presets/*.txt)
install(FILES ${sandgate_presets} DESTINATION ${CMAKE_INSTALL_DATADIR}/sandgate/presets)
# The budgets suggestions (`--budgets FILE`: copy one and adjust it).
file(GLOB sandgate_budgets ${PROJECT_SOURCE_DIR}/config/budgets/*.txt)
install(FILES ${sandgate_budgets} DESTINATION ${CMAKE_INSTALL_DATADIR}/sandgate/budgets)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE
              ${PROJECT_SOURCE_DIR}/THIRD-PARTY-NOTICES
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The README links docs/PAGE.md: the pages keep that place beside it.
file(GLOB sandgate_doc_pages ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${sandgate_doc_pages} DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
# Debian's copyright file (machine-readable) and changelog, where Debian policy puts them: the
# changelog compressed as dpkg and lintian expect (gzip -9n: no name, no time, the same bytes on
# every build).
find_program(SANDGATE_GZIP gzip REQUIRED)
add_custom_command(
  OUTPUT ${PROJECT_BINARY_DIR}/debian/changelog.gz
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/debian
  COMMAND ${SANDGATE_GZIP} -9 -n -c ${PROJECT_SOURCE_DIR}/debian/changelog
          > ${PROJECT_BINARY_DIR}/debian/changelog.gz
  DEPENDS ${PROJECT_SOURCE_DIR}/debian/changelog
  COMMENT "debian/changelog.gz"
  VERBATIM)
add_custom_target(debian_changelog ALL DEPENDS ${PROJECT_BINARY_DIR}/debian/changelog.gz)
install(FILES ${PROJECT_SOURCE_DIR}/debian/copyright ${PROJECT_BINARY_DIR}/debian/changelog.gz
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The unit and the agent name the executable by its full path, known only at install time
# (--prefix, or /usr inside the package): the path they ship with is rewritten while copying.
# systemd looks for user units in lib/systemd/user under both /usr and /usr/local, whatever
# the distribution's libdir is.
set(sandgate_install_services [=[
  function(sandgate_install_service source shipped_path destination)
    set(installed_path "${CMAKE_INSTALL_PREFIX}/@CMAKE_INSTALL_BINDIR@/sandgate")
    file(READ "${source}" text)
    string(FIND "${text}" "${shipped_path}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${source} no longer names ${shipped_path}")
    endif()
    string(REPLACE "${shipped_path}" "${installed_path}" text "${text}")
    string(REPLACE "/usr/share/doc/sandgate" "${CMAKE_INSTALL_PREFIX}/@CMAKE_INSTALL_DOCDIR@"
           text "${text}")
    get_filename_component(name "${source}" NAME)
    # One staging folder per destination: two installs from this tree may run at once.
    string(MD5 key "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}")
    set(staged "@PROJECT_BINARY_DIR@/install-staging/${key}/${name}")
    file(WRITE "${staged}" "${text}")
    file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/${destination}" TYPE FILE
         PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ FILES "${staged}")
    file(REMOVE_RECURSE "@PROJECT_BINARY_DIR@/install-staging/${key}")
  endfunction()
  sandgate_install_service("@PROJECT_SOURCE_DIR@/config/sandgate.service"
                           "/usr/bin/sandgate" "lib/systemd/user")
  sandgate_install_service("@PROJECT_SOURCE_DIR@/config/io.sandgate.gate.plist"
                           "/usr/local/bin/sandgate" "@CMAKE_INSTALL_DATADIR@/sandgate/launchd")
]=])
string(CONFIGURE "${sandgate_install_services}" sandgate_install_services @ONLY)
install(CODE "${sandgate_install_services}")

# The Debian package. dpkg-shlibdeps computes Depends from the libraries the executables link
# (libc-ares2, libre2-9, libidn2-0, libssl3, libtomlplusplus3, libstdc++6, libc6, ...).
set(SANDGATE_PACKAGE_MAINTAINER
    "sandgate maintainers <maintainers@users.noreply.a-seed-d6f93373.example>"
    CACHE STRING "Maintainer field of the Debian package")
set(CPACK_PACKAGE_NAME sandgate)
set(CPACK_PACKAGE_VENDOR "sandgate")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${SANDGATE_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "network gate for sandboxed AI agents (HTTP CONNECT proxy)")
# Debian wants the long description in lines of under 80 characters.
string(CONCAT CPACK_PACKAGE_DESCRIPTION
    "sandgate is a fast, strict HTTP CONNECT egress proxy. It decides, for every\n"
    "connection an agent's tools try to make, whether it may leave the machine,\n"
    "and when it may not, it says why: a stable reason code, the rule that\n"
    "matched, and a sentence a person can act on. It reads goose's sandbox\n"
    "blocklist and variables, checks the addresses names resolve to, reloads its\n"
    "rules live and serves Prometheus metrics. Includes sandgate-connect (an SSH\n"
    "ProxyCommand), a systemd user unit and a launchd agent.")
set(CPACK_STRIP_FILES ON)
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  set(CPACK_GENERATOR DEB)
  set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
else()
  set(CPACK_GENERATOR TGZ)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${SANDGATE_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "prometheus")
# `sandgate run`'s capture on Linux hands its rules to the nft command.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "nftables")
include(CPack)
