// Boost.Asio and Boost.Beast are compiled once, here, instead of in every file that includes
// them (BOOST_ASIO_SEPARATE_COMPILATION / BOOST_BEAST_SEPARATE_COMPILATION): a lean compile graph.
#include <boost/asio/impl/src.hpp>
#include <boost/beast/src.hpp>
