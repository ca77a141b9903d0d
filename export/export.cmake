# export.cmake - export/: the ONNX exporter (issue 16). The protobuf code is
# generated at build time by protoc-c from the onnx.proto libonnx-dev ships
# (Debian: protobuf-c-compiler, libprotobuf-c-dev, libonnx-dev; scripts/setup.sh).
include(GNUInstallDirs)
find_program(PROTOC_C protoc-c REQUIRED)
find_library(PROTOBUF_C_LIB protobuf-c REQUIRED)
find_path(PROTOBUF_C_INCLUDE protobuf-c/protobuf-c.h REQUIRED)
find_path(ONNX_PROTO_DIR onnx/onnx.proto PATHS /usr/include /usr/local/include REQUIRED)

set(ONNX_GEN_DIR ${CMAKE_BINARY_DIR}/onnx_gen)
set(ONNX_GEN ${ONNX_GEN_DIR}/onnx/onnx.pb-c.c ${ONNX_GEN_DIR}/onnx/onnx.pb-c.h)
add_custom_command(OUTPUT ${ONNX_GEN}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${ONNX_GEN_DIR}
  COMMAND ${PROTOC_C} --c_out=${ONNX_GEN_DIR} -I${ONNX_PROTO_DIR} ${ONNX_PROTO_DIR}/onnx/onnx.proto
  DEPENDS ${ONNX_PROTO_DIR}/onnx/onnx.proto
  COMMENT "protoc-c: onnx.proto -> C")

file(GLOB EXPORT_SRC CONFIGURE_DEPENDS export/*.c)
add_library(mgc_export STATIC ${EXPORT_SRC} ${ONNX_GEN})
target_include_directories(mgc_export PUBLIC ${ONNX_GEN_DIR} ${PROTOBUF_C_INCLUDE})
target_link_libraries(mgc_export PUBLIC mgc_ir ${PROTOBUF_C_LIB})
