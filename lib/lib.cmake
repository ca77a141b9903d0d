# lib.cmake - libmgc: the library stage (lib/*.c over passes/ and runtime/),
# built shared (libmgc.so, exporting only mgc_*) and static (libmgc.a, every
# stage's objects in one archive), installed with include/mgc.h, the stdlib
# and a pkg-config file mgc.pc.
include(GNUInstallDirs)
set(MGC_STAGES mgc_ir mgc_frontend mgc_passes mgc_runtime mgc_export)
if(TARGET mgc_cuda)
  list(APPEND MGC_STAGES mgc_cuda)
endif()
file(GLOB LIB_SRC CONFIGURE_DEPENDS lib/*.c)
set(MGC_LIB_DEFS MGC_INSTALL_STDLIB_DIR="${CMAKE_INSTALL_FULL_DATADIR}/mgc/stdlib"
                 MGC_SOURCE_STDLIB_DIR="${CMAKE_SOURCE_DIR}/stdlib")

add_library(mgc_shared SHARED ${LIB_SRC})
target_compile_definitions(mgc_shared PRIVATE ${MGC_LIB_DEFS})
target_include_directories(mgc_shared PUBLIC ${CMAKE_SOURCE_DIR}/include)
target_link_libraries(mgc_shared PRIVATE mgc_passes mgc_runtime mgc_export)
target_link_options(mgc_shared PRIVATE -Wl,--version-script=${CMAKE_SOURCE_DIR}/lib/mgc.map -Wl,--no-undefined)
set_target_properties(mgc_shared PROPERTIES OUTPUT_NAME mgc VERSION 0.1.0 SOVERSION 0
                      LINK_DEPENDS ${CMAKE_SOURCE_DIR}/lib/mgc.map LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

set(MGC_STAGE_OBJECTS)
foreach(stage ${MGC_STAGES})
  list(APPEND MGC_STAGE_OBJECTS $<TARGET_OBJECTS:${stage}>)
endforeach()
add_library(mgc_static STATIC ${LIB_SRC} ${MGC_STAGE_OBJECTS})
target_compile_definitions(mgc_static PRIVATE ${MGC_LIB_DEFS})
target_include_directories(mgc_static PUBLIC ${CMAKE_SOURCE_DIR}/include)
target_link_libraries(mgc_static PRIVATE mgc_passes mgc_runtime mgc_export)
set_target_properties(mgc_static PROPERTIES OUTPUT_NAME mgc ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

# pkg-config: what a static link needs besides libmgc.a
set(MGC_PC_PRIVATE "-lopenblas -ldnnl -lcjson -lprotobuf-c -lz -lpthread -lm")
if(MPI_C_FOUND)
  string(APPEND MGC_PC_PRIVATE " ${MPI_C_LINK_FLAGS}")
  foreach(l ${MPI_C_LIBRARIES})
    string(APPEND MGC_PC_PRIVATE " ${l}")
  endforeach()
endif()
if(TARGET mgc_cuda)
  string(APPEND MGC_PC_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcudart -lcublas -lcublasLt ${MGC_CUDNN_LIB} ${MGC_NCCL_LIB} -lstdc++")
endif()
# relocatable: prefix from the .pc file's own place
file(RELATIVE_PATH MGC_PC_UP ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" MGC_PC_UP "${MGC_PC_UP}")
configure_file(${CMAKE_SOURCE_DIR}/lib/mgc.pc.in ${CMAKE_BINARY_DIR}/mgc.pc @ONLY)

install(TARGETS mgc_shared mgc_static LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES include/mgc.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_BINARY_DIR}/mgc.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
install(DIRECTORY stdlib/ DESTINATION ${CMAKE_INSTALL_DATADIR}/mgc/stdlib FILES_MATCHING PATTERN "*.mg")
