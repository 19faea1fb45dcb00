/* placeholder: implemented by its owner */
#include "kb_score.h"
