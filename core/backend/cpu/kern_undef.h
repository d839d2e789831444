// kern_undef.h: clears the per-type macros of kern.h.
#undef T
#undef TS
#undef VT
#undef VW
#undef VZERO
#undef VSET1
#undef VLOAD
#undef VSTORE
#undef VMLOAD
#undef VMSTORE
#undef VFMA
#undef VMUL
#undef VADD
#undef EXP
#undef VTAIL
#undef VHSUM
