# Turns a text file into a C source defining a NUL-terminated char array.
# Run at build time (kb_embed() in KbEmbed.cmake does it):
#   cmake -DIN=fold.lua -DOUT=fold_lua.c -DNAME=kb_fold_lua [-DLIB=lib.lua]
#         [-DKEYS=kb_keys.h] -P embed.cmake
# With KEYS, the array starts with the Lua key prelude made from that
# header (lua_keys.cmake: K.sub(id) ...). With LIB, LIB's text follows: a
# Lua library the script calls, compiled in front of it. Then IN's text.
# Bytes are written as hex so any content (quotes, backslashes, non-ASCII)
# survives without escaping rules.
cmake_policy(VERSION 3.25)
set(hex "")
if(KEYS)
  include(${CMAKE_CURRENT_LIST_DIR}/lua_keys.cmake)
  kb_lua_keys("${KEYS}" prelude)
  string(HEX "${prelude}" hex)
endif()
if(LIB)
  file(READ "${LIB}" lib_hex HEX)
  string(APPEND hex "${lib_hex}0a")
endif()
file(READ "${IN}" in_hex HEX)
string(APPEND hex "${in_hex}")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)"
       "\\1\n\t" bytes "${bytes}")
get_filename_component(src "${IN}" NAME)
set(from "${src}")
if(LIB)
  get_filename_component(lib "${LIB}" NAME)
  set(from "${lib} and ${from}")
endif()
if(KEYS)
  get_filename_component(keys "${KEYS}" NAME)
  set(from "${keys} (the Lua key prelude), ${from}")
endif()
file(WRITE "${OUT}"
  "/* Generated from ${from} by cmake/embed.cmake; do not edit. */\n"
  "extern const char ${NAME}[];\n"
  "const char ${NAME}[] = {\n\t${bytes}0x00};\n")
