/** Categories (docs/api.md#resources): what a category is, and what creates one. */

/** Category representation (`description` absent when not set). */
export interface Category {
  id: number;
  name: string;
  description?: string;
}

/** A category to create. */
export interface NewCategory {
  name: string;
  description?: string;
}
