// The target's functions are inline in include/CStowageMalloc.h; SwiftPM needs one source file.
#include "CStowageMalloc.h"
