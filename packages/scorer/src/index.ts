// This package is filled by a later issue (see its README); it exports nothing yet.
export {};
