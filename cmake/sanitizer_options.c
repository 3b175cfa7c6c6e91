/*
 * sanitizer_options.c — what the test flavour's AddressSanitizer assumes when the
 * environment says nothing (CMakeLists.txt links it into every executable; it is built
 * without instrumentation, so a binary that is not sanitized links it too, unused).
 *
 * The test flavour builds UBSan in trap mode (docs/architecture.md#tests): an
 * undefined operation executes a trap instruction instead of calling libubsan. With
 * handle_sigill, ASan turns that SIGILL into a report naming the file, line and stack,
 * also in processes whose environment was scrubbed (ASAN_OPTIONS cannot reach them).
 * ASAN_OPTIONS, where it is set, overrides these.
 */
const char *__asan_default_options(void);

const char *__asan_default_options(void)
{
    return "handle_sigill=1";
}
