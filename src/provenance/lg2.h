/*
 * lg2.h — libgit2, opened when a command first needs git (lazylib.h).
 *
 * gitops.c includes this instead of <git2.h>: each libgit2 function it calls is a
 * pointer in bd_lg2, filled by bd_lg2_load(), which bd_git_open() calls before anything
 * else. Only the functions listed here can be called; a new one is added to the list
 * (the build fails on a call to one that is not: it is then an undeclared pointer).
 */
#ifndef BD_LG2_H
#define BD_LG2_H

#include <git2.h>

#include "err.h"

/* Every libgit2 function gitops.c calls. */
#define BD_LG2_FUNCS(X)                                                                            \
    X(git_blob_free)                                                                               \
    X(git_blob_lookup)                                                                             \
    X(git_blob_rawcontent)                                                                         \
    X(git_blob_rawsize)                                                                            \
    X(git_buf_dispose)                                                                             \
    X(git_commit_author)                                                                           \
    X(git_commit_create)                                                                           \
    X(git_commit_create_buffer)                                                                    \
    X(git_commit_create_with_signature)                                                            \
    X(git_commit_free)                                                                             \
    X(git_commit_lookup)                                                                           \
    X(git_commit_parent)                                                                           \
    X(git_commit_parentcount)                                                                      \
    X(git_commit_summary)                                                                          \
    X(git_commit_tree)                                                                             \
    X(git_commit_tree_id)                                                                          \
    X(git_error_last)                                                                              \
    X(git_index_add_bypath)                                                                        \
    X(git_index_entrycount)                                                                        \
    X(git_index_find_prefix)                                                                       \
    X(git_index_free)                                                                              \
    X(git_index_get_byindex)                                                                       \
    X(git_index_get_bypath)                                                                        \
    X(git_index_has_conflicts)                                                                     \
    X(git_index_read)                                                                              \
    X(git_index_remove_bypath)                                                                     \
    X(git_index_write)                                                                             \
    X(git_index_write_tree)                                                                        \
    X(git_libgit2_init)                                                                            \
    X(git_libgit2_shutdown)                                                                        \
    X(git_message_prettify)                                                                        \
    X(git_object_free)                                                                             \
    X(git_object_lookup)                                                                           \
    X(git_oid_cpy)                                                                                 \
    X(git_oid_equal)                                                                               \
    X(git_oid_tostr)                                                                               \
    X(git_reference_create)                                                                        \
    X(git_reference_create_matching)                                                               \
    X(git_reference_free)                                                                          \
    X(git_reference_lookup)                                                                        \
    X(git_reference_name_to_id)                                                                    \
    X(git_reference_symbolic_target)                                                               \
    X(git_reference_type)                                                                          \
    X(git_repository_free)                                                                         \
    X(git_repository_index)                                                                        \
    X(git_repository_is_bare)                                                                      \
    X(git_repository_open_ext)                                                                     \
    X(git_repository_workdir)                                                                      \
    X(git_reset_default)                                                                           \
    X(git_revwalk_free)                                                                            \
    X(git_revwalk_new)                                                                             \
    X(git_revwalk_next)                                                                            \
    X(git_revwalk_push_head)                                                                       \
    X(git_revwalk_sorting)                                                                         \
    X(git_signature_default)                                                                       \
    X(git_signature_free)                                                                          \
    X(git_status_byindex)                                                                          \
    X(git_status_list_entrycount)                                                                  \
    X(git_status_list_free)                                                                        \
    X(git_status_list_new)                                                                         \
    X(git_status_options_init)                                                                     \
    X(git_tree_entry_byindex)                                                                      \
    X(git_tree_entry_byname)                                                                       \
    X(git_tree_entry_bypath)                                                                       \
    X(git_tree_entry_filemode)                                                                     \
    X(git_tree_entry_free)                                                                         \
    X(git_tree_entry_id)                                                                           \
    X(git_tree_entry_name)                                                                         \
    X(git_tree_entry_type)                                                                         \
    X(git_tree_entrycount)                                                                         \
    X(git_tree_free)                                                                               \
    X(git_tree_lookup)

typedef struct bd_lg2_table {
#define BD_LG2_SLOT(fn) __typeof__(fn) *fn;
    BD_LG2_FUNCS(BD_LG2_SLOT)
#undef BD_LG2_SLOT
} bd_lg2_table;

/* Filled by bd_lg2_load(); read only after it returned 0. */
extern bd_lg2_table bd_lg2;

/* Open libgit2 (BD_LIBGIT2_SONAME, from the build) and bind every function above, once
 * per process. Returns 0, or -1 with err set (env.library_missing: the library or one
 * of its functions is missing, with the package to install). */
int bd_lg2_load(bd_err *err);

/* From here on, a call to one of the functions is a call through the table (lg2.c, which
 * names the functions to bind them, defines BD_LG2_TABLE_ONLY). */
#ifndef BD_LG2_TABLE_ONLY
#define git_blob_free                    (bd_lg2.git_blob_free)
#define git_blob_lookup                  (bd_lg2.git_blob_lookup)
#define git_blob_rawcontent              (bd_lg2.git_blob_rawcontent)
#define git_blob_rawsize                 (bd_lg2.git_blob_rawsize)
#define git_buf_dispose                  (bd_lg2.git_buf_dispose)
#define git_commit_author                (bd_lg2.git_commit_author)
#define git_commit_create                (bd_lg2.git_commit_create)
#define git_commit_create_buffer         (bd_lg2.git_commit_create_buffer)
#define git_commit_create_with_signature (bd_lg2.git_commit_create_with_signature)
#define git_commit_free                  (bd_lg2.git_commit_free)
#define git_commit_lookup                (bd_lg2.git_commit_lookup)
#define git_commit_parent                (bd_lg2.git_commit_parent)
#define git_commit_parentcount           (bd_lg2.git_commit_parentcount)
#define git_commit_summary               (bd_lg2.git_commit_summary)
#define git_commit_tree                  (bd_lg2.git_commit_tree)
#define git_commit_tree_id               (bd_lg2.git_commit_tree_id)
#define git_error_last                   (bd_lg2.git_error_last)
#define git_index_add_bypath             (bd_lg2.git_index_add_bypath)
#define git_index_entrycount             (bd_lg2.git_index_entrycount)
#define git_index_find_prefix            (bd_lg2.git_index_find_prefix)
#define git_index_free                   (bd_lg2.git_index_free)
#define git_index_get_byindex            (bd_lg2.git_index_get_byindex)
#define git_index_get_bypath             (bd_lg2.git_index_get_bypath)
#define git_index_has_conflicts          (bd_lg2.git_index_has_conflicts)
#define git_index_read                   (bd_lg2.git_index_read)
#define git_index_remove_bypath          (bd_lg2.git_index_remove_bypath)
#define git_index_write                  (bd_lg2.git_index_write)
#define git_index_write_tree             (bd_lg2.git_index_write_tree)
#define git_libgit2_init                 (bd_lg2.git_libgit2_init)
#define git_libgit2_shutdown             (bd_lg2.git_libgit2_shutdown)
#define git_message_prettify             (bd_lg2.git_message_prettify)
#define git_object_free                  (bd_lg2.git_object_free)
#define git_object_lookup                (bd_lg2.git_object_lookup)
#define git_oid_cpy                      (bd_lg2.git_oid_cpy)
#define git_oid_equal                    (bd_lg2.git_oid_equal)
#define git_oid_tostr                    (bd_lg2.git_oid_tostr)
#define git_reference_create             (bd_lg2.git_reference_create)
#define git_reference_create_matching    (bd_lg2.git_reference_create_matching)
#define git_reference_free               (bd_lg2.git_reference_free)
#define git_reference_lookup             (bd_lg2.git_reference_lookup)
#define git_reference_name_to_id         (bd_lg2.git_reference_name_to_id)
#define git_reference_symbolic_target    (bd_lg2.git_reference_symbolic_target)
#define git_reference_type               (bd_lg2.git_reference_type)
#define git_repository_free              (bd_lg2.git_repository_free)
#define git_repository_index             (bd_lg2.git_repository_index)
#define git_repository_is_bare           (bd_lg2.git_repository_is_bare)
#define git_repository_open_ext          (bd_lg2.git_repository_open_ext)
#define git_repository_workdir           (bd_lg2.git_repository_workdir)
#define git_reset_default                (bd_lg2.git_reset_default)
#define git_revwalk_free                 (bd_lg2.git_revwalk_free)
#define git_revwalk_new                  (bd_lg2.git_revwalk_new)
#define git_revwalk_next                 (bd_lg2.git_revwalk_next)
#define git_revwalk_push_head            (bd_lg2.git_revwalk_push_head)
#define git_revwalk_sorting              (bd_lg2.git_revwalk_sorting)
#define git_signature_default            (bd_lg2.git_signature_default)
#define git_signature_free               (bd_lg2.git_signature_free)
#define git_status_byindex               (bd_lg2.git_status_byindex)
#define git_status_list_entrycount       (bd_lg2.git_status_list_entrycount)
#define git_status_list_free             (bd_lg2.git_status_list_free)
#define git_status_list_new              (bd_lg2.git_status_list_new)
#define git_status_options_init          (bd_lg2.git_status_options_init)
#define git_tree_entry_byindex           (bd_lg2.git_tree_entry_byindex)
#define git_tree_entry_byname            (bd_lg2.git_tree_entry_byname)
#define git_tree_entry_bypath            (bd_lg2.git_tree_entry_bypath)
#define git_tree_entry_filemode          (bd_lg2.git_tree_entry_filemode)
#define git_tree_entry_free              (bd_lg2.git_tree_entry_free)
#define git_tree_entry_id                (bd_lg2.git_tree_entry_id)
#define git_tree_entry_name              (bd_lg2.git_tree_entry_name)
#define git_tree_entry_type              (bd_lg2.git_tree_entry_type)
#define git_tree_entrycount              (bd_lg2.git_tree_entrycount)
#define git_tree_free                    (bd_lg2.git_tree_free)
#define git_tree_lookup                  (bd_lg2.git_tree_lookup)

#endif

#endif
