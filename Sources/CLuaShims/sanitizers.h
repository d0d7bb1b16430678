// Which sanitizer this file is compiled under (private to CLuaShims).
#ifndef LUNETTE_SANITIZERS_H
#define LUNETTE_SANITIZERS_H

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LUNETTE_THREAD_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) && !defined(LUNETTE_THREAD_SANITIZER)
#define LUNETTE_THREAD_SANITIZER 1
#endif

#endif
