/* cutrace's exported dlsym for x86-64: see dlsym_hook.h for why this is assembly.
 *   void* dlsym(void* handle, const char* name)     rdi = handle, rsi = name
 * Names starting with "cu" or "__cu" that cutrace hooks (cutraceDlsymHooks) go to
 * cutraceDlsymHook(handle, name, caller); all other lookups jump straight to glibc's dlsym with
 * the caller's frame untouched, so its answer and dlerror() text are glibc's. */

/* Calls FN(name) with dlsym's own arguments kept for after it. Entry rsp is 8 mod 16; two
 * pushes and 8 bytes align the call. */
.macro call_keeping_arguments fn
        pushq   %rdi
        .cfi_adjust_cfa_offset 8
        pushq   %rsi
        .cfi_adjust_cfa_offset 8
        subq    $8, %rsp
        .cfi_adjust_cfa_offset 8
        movq    %rsi, %rdi
        call    \fn
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        popq    %rsi
        .cfi_adjust_cfa_offset -8
        popq    %rdi
        .cfi_adjust_cfa_offset -8
.endm

        .text
        .globl  dlsym
        .type   dlsym, @function
        .p2align 4
dlsym:
        .cfi_startproc
        endbr64
        test    %rsi, %rsi
        jz      .Lforward
        movzbl  (%rsi), %eax
        cmpb    $0x63, %al              /* 'c' */
        jne     .Lunderscore
        cmpb    $0x75, 1(%rsi)          /* 'u' */
        je      .Lhook
        jmp     .Lforward
.Lunderscore:
        cmpb    $0x5f, %al              /* '_' */
        jne     .Lforward
        cmpb    $0x5f, 1(%rsi)
        jne     .Lforward
        cmpb    $0x63, 2(%rsi)
        jne     .Lforward
        cmpb    $0x75, 3(%rsi)
        jne     .Lforward
.Lhook:
        /* A cu* name: one cutrace hooks? */
        call_keeping_arguments cutraceDlsymHooks
        test    %eax, %eax
        jz      .Lforward
        movq    (%rsp), %rdx            /* the caller's return address */
        jmp     cutraceDlsymHook
.Lforward:
        movq    cutraceRealDlsym(%rip), %rax
        test    %rax, %rax
        jz      .Lresolve
        jmp     *%rax
.Lresolve:
        /* First dlsym of the process, before our constructor: resolve glibc's, then forward. */
        call_keeping_arguments cutraceResolveRealDlsym
        test    %rax, %rax
        jz      .Lnull
        jmp     *%rax
.Lnull:
        ret
        .cfi_endproc
        .size   dlsym, .-dlsym
        .section .note.GNU-stack,"",@progbits
