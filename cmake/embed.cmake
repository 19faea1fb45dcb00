# Turns a text file into a C source defining a NUL-terminated char array.
# Run at build time (kb_embed() in KbEmbed.cmake does it):
#   cmake -DIN=fold.lua -DOUT=fold_lua.c -DNAME=kb_fold_lua -P embed.cmake
# Bytes are written as hex so any content (quotes, backslashes, non-ASCII)
# survives without escaping rules.
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)"
       "\\1\n\t" bytes "${bytes}")
get_filename_component(src "${IN}" NAME)
file(WRITE "${OUT}"
  "/* Generated from ${src} by cmake/embed.cmake; do not edit. */\n"
  "extern const char ${NAME}[];\n"
  "const char ${NAME}[] = {\n\t${bytes}0x00};\n")
