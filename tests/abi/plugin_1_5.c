/* A plugin built against the ABI 1.5 header (see compat_plugin.h). */
#include "graphpass-1.5.h"
#include "compat_plugin.h"
