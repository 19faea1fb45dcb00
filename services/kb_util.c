/* placeholder: implemented by its owner */
#include "kb_util.h"
