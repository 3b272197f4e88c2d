# The manual pages: man/NAME.SECTION.md (pandoc's Markdown, as docs/ is written) into
# build/man/NAME.SECTION, and a gzip -9n copy (no name, no time: the same bytes on every build) that
# `cmake --install` and the Debian package install under share/man/manSECTION. The commands and
# settings in sandgate(1) and sandgate.toml(5) are the rows of docs/settings.md, inserted by the
# filter man/docs-table.lua, so the pages and the docs cannot disagree. Part of ALL: pandoc is a
# build dependency (scripts/install-deps.sh installs Debian's); man_pages_test checks the result.
include(GNUInstallDirs)
find_program(SANDGATE_PANDOC pandoc)
if(NOT SANDGATE_PANDOC)
  message(FATAL_ERROR "pandoc not found: it makes the manual pages (man/*.md). Install it with "
                      "scripts/install-deps.sh (Debian's package pandoc; on macOS, brew install pandoc).")
endif()
find_program(SANDGATE_GZIP gzip REQUIRED)

set(sandgate_man_pages sandgate.1 sandgate-run.1 sandgate-connect.1 sandgate-load.1 sandgate.toml.5)
set(sandgate_man_outputs)
foreach(page IN LISTS sandgate_man_pages)
  set(source ${PROJECT_SOURCE_DIR}/man/${page}.md)
  set(output ${PROJECT_BINARY_DIR}/man/${page})
  add_custom_command(
    OUTPUT ${output} ${output}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
    COMMAND ${SANDGATE_PANDOC} --standalone --from markdown --to man
            --lua-filter ${PROJECT_SOURCE_DIR}/man/docs-table.lua
            --metadata source-root=${PROJECT_SOURCE_DIR}
            --metadata "footer=sandgate ${PROJECT_VERSION}"
            --output ${output} ${source}
    COMMAND ${SANDGATE_GZIP} -9 -n -c ${output} > ${output}.gz
    DEPENDS ${source} ${PROJECT_SOURCE_DIR}/man/docs-table.lua ${PROJECT_SOURCE_DIR}/docs/settings.md
    COMMENT "Manual page ${page}"
    VERBATIM)
  list(APPEND sandgate_man_outputs ${output} ${output}.gz)
  string(REGEX MATCH "[0-9]$" section ${page})
  install(FILES ${output}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
endforeach()
add_custom_target(man_pages ALL DEPENDS ${sandgate_man_outputs})
