;;; eglot_driver.el --- drive Emacs's eglot against cad-lsp, headless  -*- lexical-binding: t -*-
;;
;; An editor without a Copy-as-Decode plugin: plain eglot (Debian's elpa-eglot), the server as a
;; generic LSP server.  Environment:
;;   CAD_FILE    the file to open (python-mode)
;;   CAD_SERVER  the server command line, a JSON array
;;   CAD_OUT     where to write the result (JSON)
;;   CAD_PICK    run the code action whose title starts with this
;; Writes {"titles": [...], "result": <executeCommand result or null>, "error": <message or null>,
;; "text": <buffer text afterwards>}.

(dolist (dir (directory-files "/usr/share/emacs/site-lisp/elpa/" t "^[a-z]"))
  (add-to-list 'load-path dir))
(require 'eglot)
(require 'json)

(setq eglot-sync-connect t
      eglot-connect-timeout 120
      eglot-confirm-server-initiated-edits nil
      jsonrpc-default-request-timeout 600)

(defun cad-driver--write (plist)
  (with-temp-file (getenv "CAD_OUT")
    (insert (json-encode plist))))

(let* ((contact (append (json-read-from-string (getenv "CAD_SERVER")) nil))
       (pick (getenv "CAD_PICK"))
       (buffer (find-file-noselect (getenv "CAD_FILE"))))
  (with-current-buffer buffer
    (python-mode)
    (eglot '(python-mode) `(transient . ,default-directory) 'eglot-lsp-server contact "python")
    ;; As `M-x eglot-code-actions' asks: the bounds of the sexp at point, here on the comment line.
    (goto-char (point-min))
    (search-forward "cad: " nil t)
    (forward-char 1)                    ; inside the instruction's first word
    (let* ((server (eglot-current-server))
           (bounds (eglot--region-bounds))
           (actions (eglot-code-actions (car bounds) (cadr bounds)))
           (titles (mapcar (lambda (a) (plist-get a :title)) actions))
           (chosen (seq-find (lambda (a) (string-prefix-p pick (plist-get a :title))) actions))
           (command (and chosen (plist-get chosen :command)))
           result error)
      (if (null command)
          (setq error (format "no code action starting with %S among %S" pick titles))
        (condition-case err
            (setq result (eglot-execute-command server (intern (plist-get command :command))
                                                (plist-get command :arguments)))
          (error (setq error (format "%S" err)))))
      (cad-driver--write (list :titles (vconcat titles) :result result :error error
                               :bounds (vector (car bounds) (cadr bounds))
                               :text (buffer-substring-no-properties (point-min) (point-max))))
      (ignore-errors (eglot-shutdown server)))))
(kill-emacs 0)
