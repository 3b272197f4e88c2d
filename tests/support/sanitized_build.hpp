// Whether this test program was built with a sanitizer (ASan or TSan). The sanitizers' runtimes
// need descriptors of their own: UBSan's vptr check probes memory through a pipe and, when it
// cannot make one, reports a false "invalid vptr" and aborts. Cases that run a gate out of
// descriptors therefore run in the optimised tree only.
#pragma once

namespace sandgate::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif
#else
inline constexpr bool kSanitizedBuild = false;
#endif

}  // namespace sandgate::testing
