/* A plugin built against the ABI 1.3 header (see compat_plugin.h). */
#include "graphpass-1.3.h"
#include "compat_plugin.h"
