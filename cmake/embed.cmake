# Turns a text file into a C source defining a NUL-terminated char array.
# Run at build time (kb_embed() in KbEmbed.cmake does it):
#   cmake -DIN=fold.lua -DOUT=fold_lua.c -DNAME=kb_fold_lua [-DLIB=lib.lua]
#         -P embed.cmake
# With LIB, the array holds LIB's text and then IN's: a Lua library the
# script calls, compiled in front of it. Bytes are written as hex so any
# content (quotes, backslashes, non-ASCII) survives without escaping rules.
set(hex "")
if(LIB)
  file(READ "${LIB}" hex HEX)
  string(APPEND hex "0a")
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
  set(from "${lib} and ${src}")
endif()
file(WRITE "${OUT}"
  "/* Generated from ${from} by cmake/embed.cmake; do not edit. */\n"
  "extern const char ${NAME}[];\n"
  "const char ${NAME}[] = {\n\t${bytes}0x00};\n")
