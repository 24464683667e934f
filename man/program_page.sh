#!/bin/sh
# A program's man page from its own --help and --version (help2man, Debian package help2man):
# the option text has one source, the program. Non-ASCII characters become groff escapes
# (preconv), so the page reads the same in every locale.
#   program_page.sh PROGRAM SECTION DESCRIPTION OUTPUT
set -eu
help2man --locale=C.UTF-8 --no-info --section "$2" --name "$3" --output "$4.utf8" "$1"
preconv -e utf-8 "$4.utf8" | grep -v '^\.lf ' > "$4"
rm -f "$4.utf8"
