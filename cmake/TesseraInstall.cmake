# Install and packaging rules (included at the end of the top-level CMakeLists.txt).
#
# `cmake --install <build> --prefix <p>` installs
#   <p>/include/{shmem.h,shmemx.h,aclshmem.h,mpp/,tessera/}   public headers
#   <p>/lib/libtessera.so*                                    the library (tools find it through $ORIGIN/../lib)
#   <p>/bin/tessera-run, tessera-cc, tessera-c++, ...         launcher, compiler wrappers, tools
#   <p>/lib/cmake/Tessera/                                    find_package(Tessera) -> Tessera::tessera
#   <p>/lib/pkgconfig/tessera.pc                              pkg-config --cflags --libs tessera
# Everything is relocatable: the CMake package and the .pc file locate the prefix from their own path.
include(CMakePackageConfigHelpers)

install(TARGETS tessera EXPORT TesseraTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
# <mpp/shmem.h> and <mpp/shmemx.h>: the SGI header directory the specification still requires.
install(DIRECTORY ${CMAKE_CURRENT_LIST_DIR}/compat/mpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(_tessera_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/Tessera)
install(EXPORT TesseraTargets NAMESPACE Tessera:: DESTINATION ${_tessera_cmake_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/TesseraConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/TesseraConfig.cmake
                              INSTALL_DESTINATION ${_tessera_cmake_dir} PATH_VARS CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/TesseraConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/TesseraConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/TesseraConfigVersion.cmake
        DESTINATION ${_tessera_cmake_dir})

file(RELATIVE_PATH TESSERA_PC_PREFIX_REL /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
configure_file(${CMAKE_CURRENT_LIST_DIR}/tessera.pc.in ${CMAKE_CURRENT_BINARY_DIR}/tessera.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tessera.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# Documentation and examples: <p>/share/doc/tessera/ (the docs, the README, the examples' sources and, when
# the docs target was built, the C++ API reference in api/html).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} FILES_MATCHING PATTERN "*.md")
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
        FILES_MATCHING PATTERN "*.c" PATTERN "*.cc")
install(DIRECTORY ${CMAKE_BINARY_DIR}/docs/api/html/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/api/html OPTIONAL)
