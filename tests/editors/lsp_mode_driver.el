;;; lsp_mode_driver.el --- drive Emacs's lsp-mode against cad-lsp, headless  -*- lexical-binding: t -*-
;;
;; A second editor without a Copy-as-Decode plugin: lsp-mode (Debian's elpa-lsp-mode), the server
;; registered as a generic stdio client and nothing else.  Environment:
;;   CAD_FILE    the file to open (python-mode)
;;   CAD_SERVER  the server command line, a JSON array
;;   CAD_OUT     where to write the result (JSON)
;;   CAD_PICK    run the code action whose title starts with this
;; Writes {"titles": [...], "result": <executeCommand result or null>, "error": <message or null>,
;; "text": <buffer text afterwards>}.  lsp-mode asks for code actions with an empty range at point
;; and runs the chosen one as `lsp-execute-code-action' does (a synchronous workspace/executeCommand,
;; during which the server's workspace/applyEdit is answered).

(dolist (dir (directory-files "/usr/share/emacs/site-lisp/elpa/" t "^[a-z]"))
  (add-to-list 'load-path dir))
(require 'json)
(setq lsp-client-packages nil                ; only the client registered below
      lsp-session-file (expand-file-name "lsp-session" (getenv "HOME"))
      lsp-auto-guess-root nil
      lsp-enable-suggest-server-download nil
      lsp-keep-workspace-alive nil
      lsp-headerline-breadcrumb-enable nil
      lsp-modeline-code-actions-enable nil
      lsp-modeline-diagnostics-enable nil
      lsp-lens-enable nil
      lsp-enable-snippet nil
      lsp-modeline-workspace-status-enable nil
      lsp-enable-file-watchers nil
      lsp-response-timeout 600
      lsp-restart 'ignore)
(require 'lsp-mode)

(defun cad-driver--write (plist)
  (with-temp-file (getenv "CAD_OUT")
    (insert (json-encode plist))))

(defun cad-driver--wait (predicate seconds)
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (funcall predicate)))

(let* ((contact (append (json-read-from-string (getenv "CAD_SERVER")) nil))
       (pick (getenv "CAD_PICK"))
       (file (getenv "CAD_FILE"))
       (buffer (find-file-noselect file)))
  (lsp-register-client
   (make-lsp-client :new-connection (lsp-stdio-connection (lambda () contact))
                    :major-modes '(python-mode)
                    :server-id 'cad-lsp))
  (lsp-workspace-folders-add (file-name-directory file))
  (with-current-buffer buffer
    (python-mode)
    (lsp)
    (unless (cad-driver--wait (lambda () (and (lsp-workspaces)
                                              (eq (lsp--workspace-status (car (lsp-workspaces))) 'initialized)))
                              120)
      (cad-driver--write (list :titles [] :result nil :error "the server did not initialize" :text ""))
      (kill-emacs 0))
    (goto-char (point-min))
    (search-forward "cad: " nil t)
    (let* ((actions (append (lsp-code-actions-at-point) nil))
           (titles (mapcar #'lsp:code-action-title actions))
           (chosen (seq-find (lambda (a) (string-prefix-p pick (lsp:code-action-title a))) actions))
           (command (and chosen (lsp:code-action-command? chosen)))
           result error)
      (if (null command)
          (setq error (format "no code action starting with %S among %S" pick titles))
        (condition-case err
            (setq result (lsp-request "workspace/executeCommand"
                                      (list :command (lsp:command-command command)
                                            :arguments (lsp:command-arguments? command))))
          (error (setq error (format "%S" err)))))
      (cad-driver--write (list :titles (vconcat titles) :result result :error error
                               :text (buffer-substring-no-properties (point-min) (point-max))))
      (ignore-errors (lsp-workspace-shutdown (car (lsp-workspaces)))))))
(kill-emacs 0)
