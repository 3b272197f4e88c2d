// Boost.JSON, compiled once for the whole project (header-only mode: its sources are included
// here and nowhere else).
#include <boost/json/src.hpp>
