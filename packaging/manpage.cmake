# Writes a man page (roff) from a program's --help: gridcast(1) from `gridcast --help`, gridcast-CMD(1)
# from `gridcast CMD --help` (its NAME line from CMD's line in `gridcast --help`'s list of commands), or
# NAME(1) from `PROGRAM --help` with SUMMARY as its NAME line (the standalone programs).
# Inputs: -DPROGRAM=<binary> -DPAGE=<output> -DVERSION=<x.y.z>, and -DSUBCOMMAND=<command, empty for
# gridcast itself> or -DNAME=<page name> -DSUMMARY=<one line>
function(help_of out)
  execute_process(COMMAND "${PROGRAM}" ${ARGN} --help OUTPUT_VARIABLE text RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " args "${ARGN}")
    message(FATAL_ERROR "${PROGRAM} ${args} --help exited with ${rc}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

if(DEFINED SUMMARY)
  set(name "${NAME}")
  set(summary "${SUMMARY}")
  help_of(help)
elseif(SUBCOMMAND STREQUAL "")
  set(name gridcast)
  set(summary "predict the run time of MPI applications at scale")
  help_of(help)
else()
  set(name gridcast-${SUBCOMMAND})
  help_of(usage)
  if(NOT usage MATCHES "\n  ${SUBCOMMAND} +([^\n]+)")
    message(FATAL_ERROR "`gridcast --help` lists no command '${SUBCOMMAND}'")
  endif()
  set(summary "${CMAKE_MATCH_1}")
  help_of(help ${SUBCOMMAND})
endif()
if(NOT help MATCHES "\n$")
  string(APPEND help "\n")
endif()

# roff: a backslash is \e, and a line that starts with . or ' would be a request: \& in front disarms it.
function(roff_escape text out)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()
roff_escape("${summary}" summary)
roff_escape("${help}" help)
string(REPLACE "-" "\\-" summary "${summary}")
string(TOUPPER "${name}" title)

# No date: the page is the same for every build of the same sources.
set(page ".TH ${title} 1 \"\" \"gridcast ${VERSION}\" \"User Commands\"
.SH NAME
${name} \\- ${summary}
.SH DESCRIPTION
.nf
${help}.fi
")
if(NOT name STREQUAL "gridcast")
  string(APPEND page ".SH SEE ALSO\n.BR gridcast (1)\n")
endif()
file(WRITE "${PAGE}" "${page}")
