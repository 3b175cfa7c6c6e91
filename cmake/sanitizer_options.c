/*
 * sanitizer_options.c — what the test flavour's AddressSanitizer assumes when the
 * environment says nothing, and one start-up cost it removes (CMakeLists.txt links it
 * into every executable; it is built without instrumentation, so a binary that is not
 * sanitized links it too, where it does nothing that matters).
 *
 * The test flavour builds UBSan in trap mode (docs/architecture.md#tests): an
 * undefined operation executes a trap instruction instead of calling libubsan. With
 * handle_sigill, ASan turns that SIGILL into a report naming the file, line and stack,
 * also in processes whose environment was scrubbed (ASAN_OPTIONS cannot reach them).
 * ASAN_OPTIONS, where it is set, overrides these.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

const char *__asan_default_options(void);

const char *__asan_default_options(void)
{
    return "handle_sigill=1";
}

/*
 * LeakSanitizer's exit scan reads every writable segment of every loaded object. The
 * sanitizer runtime's own .bss is 5.5 MiB, almost all of it never touched, so the scan
 * faults in some 1,400 zero pages one by one: half of a test-flavour process's page
 * faults (docs/architecture.md#tests). Collapsing each whole 2 MiB
 * stretch of such a .bss into a huge page at start replaces about 1,000 of those
 * faults with two page allocations. Where the kernel has no MADV_COLLAPSE (before
 * Linux 6.1) or no huge page to give, madvise fails and nothing changes.
 */
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

enum { HUGE_PAGE = 2 << 20 };

static int collapse_bss(struct dl_phdr_info *info, size_t size, void *unused)
{
    (void)size;
    (void)unused;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        /* The zero-filled tail past the file's bytes, anonymous memory of its own from the
         * next page on; its first whole huge page starts past that page anyway. */
        uintptr_t start = info->dlpi_addr + ph->p_vaddr + ph->p_filesz;
        uintptr_t end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        uintptr_t huge_start = (start + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
        uintptr_t huge_end = end & ~(uintptr_t)(HUGE_PAGE - 1);
        if (huge_end > huge_start)
            (void)madvise((void *)huge_start, huge_end - huge_start, MADV_COLLAPSE);
    }
    return 0;
}

__attribute__((constructor)) static void collapse_sanitizer_bss(void)
{
    dl_iterate_phdr(collapse_bss, NULL);
}
