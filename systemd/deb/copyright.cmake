# Writes the .deb's /usr/share/doc/layoutd/copyright (Debian's
# machine-readable format, DEP-5) from the tree's LICENSE: the license
# text itself, as a License: paragraph (blank lines as " ."), so that the
# package and the tree can never disagree. Run at configure time:
#   cmake -DLICENSE=... -DOUT=... -P copyright.cmake
file(READ "${LICENSE}" text)
string(REGEX REPLACE "\n$" "" text "${text}")
# A CMake list splits at ';' and treats '[' ']' specially: hide them while
# the text is a list of lines.
string(REPLACE ";" "@SEMICOLON@" text "${text}")
string(REPLACE "[" "@LBRACKET@" text "${text}")
string(REPLACE "]" "@RBRACKET@" text "${text}")
string(REPLACE "\n" ";" lines "${text}")
set(body "")
foreach(line IN LISTS lines)
  if(line MATCHES "^[ \t]*$")
    string(APPEND body " .\n")
  else()
    string(APPEND body " ${line}\n")
  endif()
endforeach()
string(REPLACE "@SEMICOLON@" ";" body "${body}")
string(REPLACE "@LBRACKET@" "[" body "${body}")
string(REPLACE "@RBRACKET@" "]" body "${body}")
file(WRITE "${OUT}"
"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: layoutd
Comment: The sources say SPDX-License-Identifier: LGPL-2.1-or-later; the
 text below is the tree's LICENSE file.

Files: *
Copyright: the layoutd developers
License: LGPL-2.1-or-later

License: LGPL-2.1-or-later
 This library is free software; you can redistribute it and/or modify it
 under the terms of the GNU Lesser General Public License as published by
 the Free Software Foundation; either version 2.1 of the License, or (at
 your option) any later version.
 .
${body}")
