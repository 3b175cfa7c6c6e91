# cmake -DIN=docs/benchdesk.1 -DOUT=<build>/benchdesk.1 -DVERSION=x.y.z -P manpage.cmake
# The installed man page: the source page with the version from VERSION in its footer.
file(READ "${IN}" page)
string(REPLACE "\"benchdesk\" \"User Commands\"" "\"benchdesk ${VERSION}\" \"User Commands\""
               out "${page}")
if(out STREQUAL page)
  message(FATAL_ERROR "${IN}: no .TH line with \"benchdesk\" \"User Commands\" to put the version in")
endif()
file(WRITE "${OUT}" "${out}")
