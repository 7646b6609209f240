/* A plugin built against the ABI 1.0 header (see compat_plugin.h). */
#include "graphpass-1.0.h"
#include "compat_plugin.h"
