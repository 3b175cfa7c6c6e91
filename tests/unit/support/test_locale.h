/* test_locale.h — shared by the unit tests that check output is locale-independent. */
#ifndef BD_TEST_LOCALE_H
#define BD_TEST_LOCALE_H

/* Switch LC_NUMERIC to a comma-decimal locale: an installed one, else de_DE.UTF-8
 * compiled with localedef into $BD_BUILD_DIR/test-locale-<tag> (one folder per test
 * program, so parallel tests never race on it). Returns 0, or -1 when neither works
 * (the caller skips, saying why). */
int bd_test_comma_locale(const char *tag);

#endif
