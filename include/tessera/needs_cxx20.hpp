// Included first by every C++ header of Tessera: under a standard older than C++20 (the headers use
// std::span and concepts) compilation stops here with one message that says so, instead of going on into
// errors from inside the headers ("'span' in namespace 'std' does not name a template type").
// tessera-c++, find_package(Tessera) and $(pkg-config --variable=cxxflags tessera) give -std=c++20.
#pragma once
#if __cplusplus < 202002L
#error "Tessera's C++ headers (tessera/tessera.hpp) need C++20: compile with -std=c++20"
// #error lets the compiler go on; a missing header ends the compilation, so this message stays the only one.
#include <tessera/compile-with-std=c++20>
#endif
