/* Tessera's version: the one place it is written. CMake reads it (project(VERSION)), the tools print it
 * (--version), and programs can test it at compile time:
 *   #if TESSERA_VERSION >= 100   (0.1.0 and later; MAJOR * 10000 + MINOR * 100 + PATCH) */
#ifndef TESSERA_VERSION_H
#define TESSERA_VERSION_H

#define TESSERA_VERSION_MAJOR 0
#define TESSERA_VERSION_MINOR 1
#define TESSERA_VERSION_PATCH 0
#define TESSERA_VERSION (TESSERA_VERSION_MAJOR * 10000 + TESSERA_VERSION_MINOR * 100 + TESSERA_VERSION_PATCH)
#define TESSERA_VERSION_STR_(x) #x
#define TESSERA_VERSION_STR(x) TESSERA_VERSION_STR_(x)
#define TESSERA_VERSION_STRING                                                                      \
  TESSERA_VERSION_STR(TESSERA_VERSION_MAJOR) "." TESSERA_VERSION_STR(TESSERA_VERSION_MINOR) "." \
  TESSERA_VERSION_STR(TESSERA_VERSION_PATCH)

#endif
