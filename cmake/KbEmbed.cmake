# kb_embed(<out_var> <symbol_prefix> [WITH <library.lua>] <file>...):
# compiles each text file (a Lua or Python script) into the binary as
# `const char <prefix><name>_<extension>[]` (fold.lua: kb_fold_lua), so a
# deployed service cannot run a script that differs from the one its
# tests ran. WITH puts a library's
# text in front of each script of the call (ranker/ranking.lua: the
# functions that write rankings). In front of every .lua file, and of its
# library, goes the key prelude made from services/kb_keys.h
# (cmake/lua_keys.cmake), so that Lua builds its Redis keys from the same
# header as C. <out_var> receives the generated C sources to add to a
# target.
set(KB_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/embed.cmake)
set(KB_EMBED_LUA_KEYS ${CMAKE_CURRENT_LIST_DIR}/lua_keys.cmake)
set(KB_EMBED_KEY_SCHEMA ${CMAKE_SOURCE_DIR}/services/kb_keys.h)

function(kb_embed out_var prefix)
  cmake_parse_arguments(E "" "WITH" "" ${ARGN})
  set(generated)
  set(lib_args)
  set(lib_deps)
  if(E_WITH)
    get_filename_component(lib ${E_WITH} ABSOLUTE)
    set(lib_args -DLIB=${lib})
    set(lib_deps ${lib})
  endif()
  foreach(path ${E_UNPARSED_ARGUMENTS})
    get_filename_component(name ${path} NAME_WE)
    get_filename_component(ext ${path} LAST_EXT)
    string(SUBSTRING ${ext} 1 -1 ext)
    get_filename_component(abs ${path} ABSOLUTE)
    file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${abs})
    set(out ${CMAKE_CURRENT_BINARY_DIR}/${name}_${ext}.c)
    set(key_args)
    set(key_deps)
    if(ext STREQUAL "lua")
      set(key_args -DKEYS=${KB_EMBED_KEY_SCHEMA})
      set(key_deps ${KB_EMBED_KEY_SCHEMA} ${KB_EMBED_LUA_KEYS})
    endif()
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -DIN=${abs} -DOUT=${out} ${lib_args}
              ${key_args} -DNAME=${prefix}${name}_${ext} -P ${KB_EMBED_SCRIPT}
      DEPENDS ${abs} ${lib_deps} ${key_deps} ${KB_EMBED_SCRIPT}
      COMMENT "embed ${rel}")
    list(APPEND generated ${out})
  endforeach()
  set(${out_var} ${generated} PARENT_SCOPE)
endfunction()
