# The Redis key schema for Lua: turns services/kb_keys.h's
# `#define KB_KEY_<NAME> "<printf format>"` lines into a Lua prelude that
# embed.cmake compiles in front of every script, so that the scripts build
# keys from the same header as the C code:
#
#   local K = {}           -- K.<name>(args...) -> the key
#   local K_PATTERN = {}   -- K_PATTERN.<name>: a Lua pattern matching the
#                          -- key, capturing each argument
#   function K.rank(a1, a2) return 'kb:rank:' .. a1 .. ':' .. a2 end
#   K_PATTERN.rank = '^kb:rank:(.-):(.*)$'
#
# <name> is the macro's name after KB_KEY_, in lower case. Arguments are
# joined with Lua's `..`, as the scripts did by hand (a number becomes its
# decimal text). A format may hold only %s, %d and the <inttypes.h> macros
# (PRIu64 ...), and literal text of [a-z0-9_:]; anything else stops the
# build, since the prelude does not quote or escape it.
#
# Included by embed.cmake (kb_lua_keys()); run alone it prints the prelude:
#   cmake -DIN=services/kb_keys.h -DOUT=/dev/stdout -P cmake/lua_keys.cmake
cmake_policy(VERSION 3.25) # script mode too: lists keep empty elements

# Sets out_var to the prelude's text, read from header.
function(kb_lua_keys header out_var)
  file(READ "${header}" text)
  # One logical line per #define; ';' and brackets would break CMake's
  # lists, and only comments hold them.
  string(REGEX REPLACE "\\\\\n" " " text "${text}")
  string(REGEX REPLACE "[][;]" " " text "${text}")
  string(REGEX MATCHALL "#define[ \t]+KB_KEY_[^\n]*" defs "${text}")
  get_filename_component(src "${header}" NAME)
  string(CONCAT lua
    "-- Generated from ${src} by cmake/lua_keys.cmake; do not edit.\n"
    "local K, K_PATTERN = {}, {}\n")
  set(n 0)
  foreach(def IN LISTS defs)
    if(NOT def MATCHES
       "^#define[ \t]+KB_KEY_([A-Z0-9_]+)[ \t]+((\"[^\"]*\"|PRI[a-zA-Z0-9]+|[ \t])+)(/\\*.*)?$")
      message(FATAL_ERROR "${src}: cannot read this key for Lua: ${def}")
    endif()
    string(TOLOWER "${CMAKE_MATCH_1}" name)
    set(fmt "${CMAKE_MATCH_2}")
    # "kb:res:%" PRIu64 ":%s" -> kb:res:%s:%s
    string(REGEX REPLACE "PRI[a-zA-Z0-9]+" "\"s\"" fmt "${fmt}")
    string(REGEX REPLACE "\"[ \t]*\"" "" fmt "${fmt}")
    string(STRIP "${fmt}" fmt)
    string(REGEX REPLACE "^\"(.*)\"$" "\\1" fmt "${fmt}")
    string(REPLACE "%d" "%s" fmt "${fmt}")
    if(NOT fmt MATCHES "^[a-z0-9_:%]*$" OR fmt MATCHES "%[^s]" OR
       fmt MATCHES "%$")
      message(FATAL_ERROR "${src}: KB_KEY_${CMAKE_MATCH_1}: a format "
              "the Lua prelude cannot spell: ${fmt}")
    endif()
    # The literal pieces between the arguments.
    string(REPLACE "%s" ";" parts "${fmt}")
    list(LENGTH parts nparts)
    math(EXPR nargs "${nparts} - 1")
    set(params)
    set(body)
    set(pattern)
    set(i 0)
    foreach(part IN LISTS parts)
      if(i GREATER 0)
        list(APPEND params "a${i}")
        list(APPEND body "a${i}")
        if(i EQUAL nargs)
          string(APPEND pattern "(.*)")
        else()
          string(APPEND pattern "(.-)")
        endif()
      endif()
      if(NOT part STREQUAL "")
        list(APPEND body "'${part}'")
        string(APPEND pattern "${part}")
      endif()
      math(EXPR i "${i} + 1")
    endforeach()
    list(JOIN params ", " params)
    list(JOIN body " .. " body)
    string(APPEND lua "function K.${name}(${params}) return ${body} end\n"
                      "K_PATTERN.${name} = '^${pattern}$'\n")
    math(EXPR n "${n} + 1")
  endforeach()
  if(n EQUAL 0)
    message(FATAL_ERROR "${src}: no KB_KEY_* definitions")
  endif()
  set(${out_var} "${lua}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  kb_lua_keys("${IN}" lua)
  file(WRITE "${OUT}" "${lua}")
endif()
