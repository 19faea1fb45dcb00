/* placeholder: implemented by its owner */
#include "kb_cases.h"
