/* placeholder: implemented by its owner */
#include "kb_popcorn.h"
