# Protocol Buffers messages compiled at build time with Debian's protoc
# (protobuf-compiler) into static libraries linked against libprotobuf.
# The .proto files live under proto/<name>/; the generated code goes to
# build/generated/ (outside exporter/, so clang-tidy and the warnings of our
# own code leave it alone).
find_package(Protobuf 3.21 REQUIRED)

# lse_proto_library(<name> <proto files relative to proto/>...): the target
# lse_proto_<name> (alias lse::proto_<name>); sources include the generated
# headers as "<path>.pb.h", e.g. "prometheus/metrics.pb.h".
function(lse_proto_library name)
  set(_root ${PROJECT_SOURCE_DIR}/proto)
  set(_out ${PROJECT_BINARY_DIR}/generated)
  file(MAKE_DIRECTORY ${_out})
  set(_sources)
  foreach(p ${ARGN})
    string(REGEX REPLACE "\\.proto$" "" _stem ${p})
    set(_gen ${_out}/${_stem}.pb.cc ${_out}/${_stem}.pb.h)
    add_custom_command(
      OUTPUT ${_gen}
      COMMAND protobuf::protoc --proto_path=${_root} --cpp_out=${_out} ${_root}/${p}
      DEPENDS ${_root}/${p} protobuf::protoc
      COMMENT "protoc ${p}"
      VERBATIM)
    list(APPEND _sources ${_gen})
  endforeach()
  add_library(lse_proto_${name} STATIC ${_sources})
  target_include_directories(lse_proto_${name} SYSTEM PUBLIC ${_out})
  target_link_libraries(lse_proto_${name} PUBLIC protobuf::libprotobuf)
  # Generated code: not ours to warn about.
  target_compile_options(lse_proto_${name} PRIVATE -w)
  add_library(lse::proto_${name} ALIAS lse_proto_${name})
endfunction()
