# The Debian package (docs/deploy.md, "Debian package and systemd"):
#   cpack --config <build>/CPackConfig.cmake -G DEB
# builds llm-stream-exporter_<version>_amd64.deb from the binary of this build
# tree (stripped) and the files under packaging/. scripts/package.sh makes a
# Release build for it and checks the result (tests/deploy/check_deb.py).
#
# Everything but the binary is the component "package", left out of a plain
# `cmake --install` (whose prefix is /usr/local, while the unit and /etc files
# name /usr/bin): only CPack installs it, with prefix /usr.

set(LSE_PACKAGE_NAME llm-stream-exporter)
set(_pkg ${CMAKE_CURRENT_SOURCE_DIR}/packaging)
set(_pkg_out ${CMAKE_CURRENT_BINARY_DIR}/packaging)

# Debian wants changelogs and manual pages compressed with gzip -9n (no name,
# no timestamp).
configure_file(${_pkg}/changelog.in ${_pkg_out}/changelog @ONLY)
foreach(_file ${_pkg_out}/changelog ${_pkg}/llm_stream_exporter.1)
  get_filename_component(_name ${_file} NAME)
  execute_process(COMMAND gzip -9nc ${_file} OUTPUT_FILE ${_pkg_out}/${_name}.gz
                  RESULT_VARIABLE _gzip_rc)
  if(NOT _gzip_rc EQUAL 0)
    message(FATAL_ERROR "gzip of ${_file} failed (${_gzip_rc})")
  endif()
endforeach()

set(_doc share/doc/${LSE_PACKAGE_NAME})
macro(lse_package_install)
  install(${ARGN} COMPONENT package EXCLUDE_FROM_ALL)
endmacro()
lse_package_install(FILES ${_pkg}/config.yaml DESTINATION /etc/${LSE_PACKAGE_NAME})
# Root only: it may hold API keys (packaging/lintian-overrides says why).
lse_package_install(FILES ${_pkg}/default DESTINATION /etc/default RENAME ${LSE_PACKAGE_NAME}
                    PERMISSIONS OWNER_READ OWNER_WRITE)
lse_package_install(FILES ${_pkg}/lintian-overrides DESTINATION share/lintian/overrides
                    RENAME ${LSE_PACKAGE_NAME})
lse_package_install(FILES ${_pkg}/${LSE_PACKAGE_NAME}.service DESTINATION /lib/systemd/system)
lse_package_install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/config/prompts
                    DESTINATION share/${LSE_PACKAGE_NAME})
lse_package_install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/config/example.yaml
                    DESTINATION ${_doc}/examples)
lse_package_install(FILES ${_pkg}/copyright ${_pkg_out}/changelog.gz DESTINATION ${_doc})
lse_package_install(FILES ${_pkg_out}/llm_stream_exporter.1.gz DESTINATION share/man/man1)

set(CPACK_PACKAGE_NAME ${LSE_PACKAGE_NAME})
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "The llm-stream-exporter authors")
set(CPACK_PACKAGE_CONTACT
    "llm-stream-exporter maintainers <maintainers@llm-stream-exporter.invalid>")
set(CPACK_PACKAGE_HOMEPAGE_URL "https://github.com/llm-stream-exporter/llm-stream-exporter")
set(CPACK_INSTALL_CMAKE_PROJECTS
    "${CMAKE_BINARY_DIR};${PROJECT_NAME};Unspecified;/"
    "${CMAKE_BINARY_DIR};${PROJECT_NAME};package;/")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends: the libraries dpkg-shlibdeps finds ...
set(CPACK_DEBIAN_PACKAGE_DEPENDS procps)  # ... and /bin/kill, the unit's ExecReload
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
# CPack indents every line after the synopsis and turns an empty one into " .".
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "Prometheus exporter that measures streamed LLM answers
llm-stream-exporter probes LLM streaming endpoints (OpenAI, Anthropic, Ollama,
Gemini and compatible servers) on a schedule and exposes, per target and
prompt, the time to first token, every gap between chunks, stalls and the
tail of each answer as Prometheus metrics.

The package runs it as the systemd service llm-stream-exporter with the
config in /etc/llm-stream-exporter/config.yaml and flags in
/etc/default/llm-stream-exporter.")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${_pkg}/conffiles ${_pkg}/postinst ${_pkg}/prerm ${_pkg}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
