#!/bin/bash
# usage: ./mdiff.sh LABEL MODE CASE_DIR FILE: the migrated copy stubrun.sh left (/tmp/hunt37run/LABEL.MODE) against the case, helper definitions dropped
diff -U1 "$3/$4" /tmp/hunt37run/$1.$2/$4 | awk '/^\+def |^\+class /{skip=1} /^[^+]/{skip=0} !skip'
